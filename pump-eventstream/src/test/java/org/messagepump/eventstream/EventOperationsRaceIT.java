package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * {@code reset}, {@code setCheckpoint} and {@code resume} against a handler blocked in the middle
 * of a delivery whose transaction is creating the stream's first checkpoint row: the operation
 * waits for the delivery and takes effect after it (it used to miss the uncommitted row: reset
 * returned 0 and the stream was never replayed).
 */
@ExtendWith(PostgresExtension.class)
class EventOperationsRaceIT {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();
  private final List<Long> delivered = new CopyOnWriteArrayList<>();
  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);

  /** A handler that blocks in its first delivery until released. */
  private EventDriver blocking(String key) {
    return store.driver(
        key,
        EventHandlers.builder()
            .on(
                OrderPlaced.class,
                (e, ctx) -> {
                  delivered.add(ctx.offset());
                  entered.countDown();
                  if (!release.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never released");
                  }
                })
            .build());
  }

  private MessagePump pump(DataSource ds, EventDriver driver) {
    return MessagePump.builder(ds)
        .name(driver.handlerKey())
        .driver(driver)
        .workers(1)
        .batchSize(1)
        .pollInterval(Duration.ofMillis(20))
        .build();
  }

  /** Three events on a new stream. */
  private long threeEvents(DataSource ds) {
    return events(ds, 3);
  }

  private long events(DataSource ds, int n) {
    return inTx(
        ds,
        tx -> {
          long id = store.createStream(tx);
          List<Object> events = new java.util.ArrayList<>();
          for (int i = 0; i < n; i++) {
            events.add(new OrderPlaced("o" + i, i));
          }
          store.appendTo(tx, id, events);
          return id;
        });
  }

  /**
   * The first delivery saw offset 0 before the operation; the operation took effect after it (and
   * maybe after later deliveries that overlapped it); then the whole stream was replayed.
   */
  private void assertReplayedAfterTheBlockedDelivery() {
    assertThat(delivered.get(0)).isZero();
    int replay = delivered.lastIndexOf(0L);
    assertThat(replay).isPositive();
    assertThat(delivered.subList(replay, delivered.size())).containsExactly(0L, 1L, 2L);
  }

  /**
   * Runs {@code operation} while the handler is blocked in its first delivery; checks that it waits
   * on a lock (not returning early) until the delivery is released; returns its result.
   */
  private <T> T duringBlockedDelivery(TestDatabase db, Supplier<T> operation) throws Exception {
    assertThat(entered.await(60, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<T> result = CompletableFuture.supplyAsync(operation);
    await()
        .atMost(WAIT)
        .until(
            () ->
                db.queryLong(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                            + " AND (query LIKE '%handlers%' OR query LIKE '%advisory_xact_lock%')")
                    > 0);
    assertThat(result).isNotDone();
    release.countDown();
    return result.get(60, TimeUnit.SECONDS);
  }

  private long checkpoint(String key, long stream) {
    return store.operations().checkpoints(key).stream()
        .filter(c -> c.streamId() == stream)
        .findFirst()
        .orElseThrow()
        .offset();
  }

  @Test
  void resetWaitsForTheDeliveryCreatingTheFirstRowAndReplaysTheStream(
      DataSource ds, TestDatabase db) throws Exception {
    long stream = threeEvents(ds);
    try (MessagePump pump = pump(ds, blocking("race-reset"))) {
      pump.start();
      int reset = duringBlockedDelivery(db, () -> store.operations().reset("race-reset"));

      assertThat(reset).isEqualTo(1);
      await().atMost(WAIT).until(() -> delivered.lastIndexOf(0L) > 0);
      await().atMost(WAIT).until(() -> checkpoint("race-reset", stream) == 3);
    }
    assertReplayedAfterTheBlockedDelivery();
  }

  @Test
  void resetWaitsForARowCreatedByARefreshOfARegisteredHandler(DataSource ds, TestDatabase db)
      throws Exception {
    // The handler is registered (and caught up on an empty stream) before the stream with events
    // exists: the row of that stream is created by a later refresh, inside the blocked delivery.
    inTx(ds, tx -> store.createStream(tx));
    try (MessagePump pump = pump(ds, blocking("race-refresh"))) {
      pump.start();
      await().atMost(WAIT).until(() -> registered("race-refresh", ds));
      long stream = threeEvents(ds);
      int reset = duringBlockedDelivery(db, () -> store.operations().reset("race-refresh"));

      // The row the blocked delivery's refresh created (an empty stream gets no row at
      // registration): 0 if reset had not waited for it.
      assertThat(reset).isEqualTo(1);
      await().atMost(WAIT).until(() -> delivered.lastIndexOf(0L) > 0);
      await().atMost(WAIT).until(() -> checkpoint("race-refresh", stream) == 3);
    }
    assertReplayedAfterTheBlockedDelivery();
  }

  private static boolean registered(String key, DataSource ds) {
    return Fixtures.queryLong(
            ds, "SELECT count(*) FROM eventstream.handlers WHERE handler_key = ?", key)
        == 1;
  }

  @Test
  void setCheckpointIsLinearizedAfterTheDelivery(DataSource ds, TestDatabase db) throws Exception {
    long stream = events(ds, 1);
    try (MessagePump pump = pump(ds, blocking("race-set"))) {
      pump.start();
      // Expecting 1: true only once the blocked delivery (offset 0) has committed.
      duringBlockedDelivery(
          db,
          () -> {
            store.operations().setCheckpoint("race-set", stream, 1, 0);
            return null;
          });
      await().atMost(WAIT).until(() -> delivered.size() >= 2);
      await().atMost(WAIT).until(() -> checkpoint("race-set", stream) == 1);
    }
    assertThat(delivered).containsExactly(0L, 0L);
  }

  @Test
  void resumeSeesAStreamParkedByTheDeliveryThatCreatedItsRow(DataSource ds, TestDatabase db)
      throws Exception {
    long stream = threeEvents(ds);
    EventDriver failing =
        store.driver(
            "race-resume",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      delivered.add(ctx.offset());
                      if (delivered.size() == 1) {
                        entered.countDown();
                        release.await(60, TimeUnit.SECONDS);
                        throw new IllegalStateException("poison");
                      }
                    })
                .build());
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("race-resume")
            .driver(failing)
            .workers(1)
            .maxFailures(1)
            .pollInterval(Duration.ofMillis(20))
            .build()) {
      pump.start();
      boolean resumed =
          duringBlockedDelivery(db, () -> store.operations().resume("race-resume", stream));

      assertThat(resumed).isTrue();
      await().atMost(WAIT).until(() -> checkpoint("race-resume", stream) == 3);
    }
    // Parked at offset 0 by the blocked delivery, resumed after it: 0 again, then the rest.
    assertThat(delivered).containsExactly(0L, 0L, 1L, 2L);
  }
}
