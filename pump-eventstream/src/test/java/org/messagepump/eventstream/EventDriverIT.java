package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Outcome;
import org.messagepump.eventstream.Fixtures.Noise;
import org.messagepump.eventstream.Fixtures.OpenTx;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.Fixtures.OrderShipped;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** The driver step by step, in explicit transactions (no pump). */
@ExtendWith(PostgresExtension.class)
class EventDriverIT {

  private EventStore store;
  private final List<String> seen = new ArrayList<>();

  @BeforeAll
  static void migrate(DataSource ds) {
    EventStore.migrate(ds);
  }

  @BeforeEach
  void clean(TestDatabase db) {
    db.execute(
        "TRUNCATE eventstream.handler_checkpoints, eventstream.stream_types, eventstream.events,"
            + " eventstream.streams");
    store = EventStore.create(db.dataSource(), CODEC);
    seen.clear();
  }

  private EventDriver recording(String key) {
    return EventDriver.builder(store)
        .handlerKey(key)
        .on(
            OrderPlaced.class,
            (ctx, e) -> seen.add(ctx.streamId() + ":" + ctx.offset() + ":" + e.orderId()))
        .build();
  }

  /** One poll and, for each delivery, handle + commit, the way the pump does; returns outcomes. */
  private List<Outcome> pollAndHandle(DataSource ds, EventDriver driver, int max) {
    return inTx(
        ds,
        tx -> {
          try {
            List<Outcome> outcomes = new ArrayList<>();
            List<Delivery> handled = new ArrayList<>();
            for (Delivery d : driver.acquire(tx, max)) {
              Outcome o = driver.handle(tx, d);
              outcomes.add(o);
              if (o == Outcome.HANDLED) {
                handled.add(d);
              }
            }
            if (!handled.isEmpty()) {
              driver.completed(tx, handled);
            }
            return outcomes;
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
  }

  private long checkpoint(String key, long stream) {
    return store.handlers().checkpoints(key).stream()
        .filter(c -> c.streamId() == stream)
        .findFirst()
        .orElseThrow()
        .offset();
  }

  @Test
  void deliversInOrderWithTheStreamPositionAndAdvancesTheCheckpoint(DataSource ds)
      throws Exception {
    AppendResult r =
        inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1), new OrderPlaced("b", 2))));
    EventDriver driver = recording("h1");

    try (OpenTx t = new OpenTx(ds)) {
      List<Delivery> ds1 = driver.acquire(t.tx, 1);
      assertThat(ds1).hasSize(1);
      Delivery d = ds1.get(0);
      assertThat(d.stream().streamId()).isEqualTo(Long.toString(r.streamId()));
      assertThat(d.stream().eventOffset()).isZero();
      assertThat(d.stream().checkpointOffset()).isZero();
      assertThat(d.messageId()).isEqualTo(r.messageIds().get(0));
      assertThat(driver.handle(t.tx, d)).isEqualTo(Outcome.HANDLED);
      driver.completed(t.tx, List.of(d));
      t.commit();
    }
    assertThat(pollAndHandle(ds, driver, 1)).containsExactly(Outcome.HANDLED);
    assertThat(pollAndHandle(ds, driver, 1)).isEmpty();
    assertThat(seen).containsExactly(r.streamId() + ":0:a", r.streamId() + ":1:b");
    assertThat(checkpoint("h1", r.streamId())).isEqualTo(2);
    assertThat(store.handlers().lag("h1")).isZero();
  }

  @Test
  void aBatchTakesConsecutiveEventsOfAStreamAndAFailureStopsTheRest(DataSource ds)
      throws Exception {
    AppendResult r =
        inTx(
            ds,
            tx ->
                store.append(
                    tx,
                    List.of(
                        new OrderPlaced("a", 1),
                        new Noise(0),
                        new OrderPlaced("fail", 2),
                        new OrderPlaced("c", 3))));
    EventDriver driver =
        EventDriver.builder(store)
            .handlerKey("batch")
            .on(
                OrderPlaced.class,
                (ctx, e) -> {
                  if (e.orderId().equals("fail")) {
                    throw new IllegalStateException("boom");
                  }
                  seen.add(e.orderId());
                })
            .build();
    try (OpenTx t = new OpenTx(ds)) {
      List<Delivery> batch = driver.acquire(t.tx, 10);
      assertThat(batch)
          .extracting(d -> d.stream().eventOffset() + "@" + d.stream().checkpointOffset())
          .containsExactly("0@0", "2@1", "3@3");
      assertThat(driver.handle(t.tx, batch.get(0))).isEqualTo(Outcome.HANDLED);
      assertThatThrownBy(() -> driver.handle(t.tx, batch.get(1))).hasMessageContaining("boom");
      driver.postpone(t.tx, batch.get(1), 1, Duration.ofMillis(1));
      // The event after the failed one is not handled, and its postponement records nothing.
      assertThat(driver.handle(t.tx, batch.get(2))).isInstanceOf(Outcome.Busy.class);
      driver.postpone(t.tx, batch.get(2), 0, Duration.ofHours(1));
      t.commit();
    }
    assertThat(seen).containsExactly("a");
    Checkpoint c = store.handlers().checkpoints("batch").get(0);
    assertThat(c.offset()).isEqualTo(1);
    assertThat(c.failures()).isEqualTo(1);
    assertThat(c.resumeAt()).isBefore(java.time.Instant.now().plusSeconds(60));
    assertThat(r.nextOffset()).isEqualTo(4);
  }

  @Test
  void anUncommittedEventIsNeverSkippedWhenTheCheckpointAdvancesToTheEnd(DataSource ds)
      throws Exception {
    AppendResult r = inTx(ds, tx -> store.append(tx, List.of(new Noise(0), new Noise(1))));
    EventDriver driver = recording("h1");
    try (OpenTx writer = new OpenTx(ds)) {
      store.appendTo(writer.tx, r.streamId(), 2, List.of(new OrderPlaced("late", 2)));
      // The reader runs while the writer holds the stream: no wait, nothing of its type yet.
      assertThat(pollAndHandle(ds, driver, 1)).isEmpty();
      assertThat(checkpoint("h1", r.streamId())).isEqualTo(2);
      writer.commit();
    }
    assertThat(pollAndHandle(ds, driver, 1)).containsExactly(Outcome.HANDLED);
    assertThat(seen).containsExactly(r.streamId() + ":2:late");
  }

  @Test
  void aTypeFilterAdvancesPastIrrelevantStreamsWithinOnePoll(DataSource ds) throws Exception {
    List<Long> noiseStreams = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      long s = inTx(ds, tx -> store.createStream(tx));
      inTx(
          ds,
          tx -> store.appendTo(tx, s, List.of(new Noise(1), new Noise(2), new OrderShipped("x"))));
      noiseStreams.add(s);
    }
    long relevant = inTx(ds, tx -> store.createStream(tx));
    inTx(ds, tx -> store.appendTo(tx, relevant, List.of(new Noise(1), new OrderPlaced("p", 1))));
    EventDriver driver = recording("filtered");

    // One poll looks at streams until it finds the one event of its type.
    assertThat(pollAndHandle(ds, driver, 1)).containsExactly(Outcome.HANDLED);
    assertThat(seen).containsExactly(relevant + ":1:p");
    assertThat(pollAndHandle(ds, driver, 1)).isEmpty();
    for (long s : noiseStreams) {
      assertThat(checkpoint("filtered", s)).isEqualTo(3);
    }
    assertThat(store.handlers().lag("filtered")).isZero();
    // A new stream is picked up.
    inTx(ds, tx -> store.appendTo(tx, store.createStream(tx), List.of(new OrderPlaced("new", 1))));
    assertThat(pollAndHandle(ds, driver, 4)).containsExactly(Outcome.HANDLED);
    assertThat(seen).last().asString().endsWith(":0:new");
  }

  @Test
  void aProjectionReturningAnotherOffsetMovesTheCheckpointThere(DataSource ds) {
    AppendResult r =
        inTx(
            ds,
            tx ->
                store.append(
                    tx,
                    List.of(
                        new OrderPlaced("0", 0),
                        new OrderPlaced("1", 1),
                        new OrderPlaced("2", 2),
                        new OrderPlaced("3", 3),
                        new OrderPlaced("4", 4))));
    AtomicLong answer = new AtomicLong(-1);
    List<Long> offsets = new ArrayList<>();
    EventDriver driver =
        EventDriver.builder(store)
            .handlerKey("projection")
            .project(
                OrderPlaced.class,
                (ctx, e) -> {
                  offsets.add(ctx.offset());
                  long a = answer.getAndSet(-1);
                  return a >= 0 ? a : ctx.nextOffset();
                })
            .build();

    pollAndHandle(ds, driver, 1); // 0 -> checkpoint 1
    pollAndHandle(ds, driver, 1); // 1 -> checkpoint 2
    answer.set(4); // the projection already holds 2 and 3: skip them
    pollAndHandle(ds, driver, 1); // 2 -> checkpoint 4
    assertThat(checkpoint("projection", r.streamId())).isEqualTo(4);
    answer.set(1); // the projection lost 1..3: replay from 1
    pollAndHandle(ds, driver, 1); // 4 -> checkpoint 1
    assertThat(checkpoint("projection", r.streamId())).isEqualTo(1);
    for (int i = 0; i < 4; i++) {
      pollAndHandle(ds, driver, 1);
    }
    assertThat(pollAndHandle(ds, driver, 1)).isEmpty();
    assertThat(offsets).containsExactly(0L, 1L, 2L, 4L, 1L, 2L, 3L, 4L);
    assertThat(checkpoint("projection", r.streamId())).isEqualTo(5);
  }

  @Test
  void aFailurePostponesOnlyThatStreamForThatHandlerAndParkingIsPerHandler(DataSource ds)
      throws SQLException {
    long bad = inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("bad", 0)))).streamId();
    long good = inTx(ds, tx -> store.createStream(tx));
    inTx(ds, tx -> store.appendTo(tx, good, List.of(new OrderPlaced("good", 0))));
    EventDriver failing =
        EventDriver.builder(store)
            .handlerKey("failing")
            .on(
                OrderPlaced.class,
                (ctx, e) -> {
                  if (e.orderId().equals("bad")) {
                    throw new IllegalStateException("boom");
                  }
                  seen.add("failing:" + e.orderId());
                })
            .build();
    EventDriver other = recording("other");

    // Claim the bad stream first (it is tracked, then postponed).
    for (int i = 0; i < 2; i++) {
      try (OpenTx t = new OpenTx(ds)) {
        List<Delivery> handled = new ArrayList<>();
        for (Delivery d : failing.acquire(t.tx, 2)) {
          try {
            failing.handle(t.tx, d);
            handled.add(d);
          } catch (Exception e) {
            failing.postpone(t.tx, d, d.failures() + 1, Duration.ofHours(1));
          }
        }
        if (!handled.isEmpty()) {
          failing.completed(t.tx, handled);
        }
        t.commit();
      }
    }
    assertThat(seen).containsExactly("failing:good");
    assertThat(checkpoint("failing", bad)).isZero();
    Checkpoint postponed =
        store.handlers().checkpoints("failing").stream()
            .filter(c -> c.streamId() == bad)
            .findFirst()
            .orElseThrow();
    assertThat(postponed.failures()).isEqualTo(1);
    assertThat(postponed.resumeAt()).isAfter(java.time.Instant.now().plusSeconds(3000));
    // The other handler reads both streams.
    pollAndHandle(ds, other, 2);
    pollAndHandle(ds, other, 2);
    assertThat(seen).contains(bad + ":0:bad");

    // Park the bad stream for "failing" only, then resume it.
    store.handlers().setCheckpoint("failing", bad, 0, 0); // unchanged, resets failures
    inTx(
        ds,
        tx -> tx.dsl().execute("UPDATE eventstream.handler_checkpoints SET resume_at = 'epoch'"));
    try (OpenTx t = new OpenTx(ds)) {
      Delivery d = failing.acquire(t.tx, 1).get(0);
      failing.park(t.tx, d, 5, "boom");
      t.commit();
    }
    assertThat(store.handlers().parked("failing"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.streamId()).isEqualTo(bad);
              assertThat(c.parkedReason()).isEqualTo("boom");
              assertThat(c.failures()).isEqualTo(5);
              assertThat(c.lag()).isEqualTo(1);
            });
    assertThat(store.handlers().parked()).hasSize(1);
    assertThat(store.handlers().parked("other")).isEmpty();
    assertThat(pollAndHandle(ds, failing, 2)).isEmpty();
    assertThat(store.handlers().resume("failing", bad)).isTrue();
    assertThat(store.handlers().resume("failing", bad)).isFalse();
    assertThat(store.handlers().parked("failing")).isEmpty();
    try (OpenTx t = new OpenTx(ds)) {
      Delivery d = failing.acquire(t.tx, 1).get(0);
      assertThat(d.failures()).isZero();
      assertThat(d.stream().eventOffset()).isZero();
    }
  }

  @Test
  void resetReplaysAndSetCheckpointIsGuarded(DataSource ds) {
    AppendResult r =
        inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1), new OrderPlaced("b", 2))));
    EventDriver driver = recording("h1");
    pollAndHandle(ds, driver, 1);
    pollAndHandle(ds, driver, 1);
    assertThat(store.handlers().handlerKeys()).containsExactly("h1");

    assertThat(store.handlers().reset("h1")).isEqualTo(1);
    assertThat(store.handlers().lag("h1")).isEqualTo(2);
    pollAndHandle(ds, driver, 1);
    pollAndHandle(ds, driver, 1);
    assertThat(seen).hasSize(4);

    assertThatThrownBy(() -> store.handlers().setCheckpoint("h1", r.streamId(), 1, 0))
        .isInstanceOf(CheckpointConflictException.class)
        .hasMessageContaining("expected checkpoint 1 but it is 2");
    store.handlers().setCheckpoint("h1", r.streamId(), 2, 1);
    assertThat(checkpoint("h1", r.streamId())).isEqualTo(1);
    // An untracked stream counts as 0.
    store.handlers().setCheckpoint("h2", r.streamId(), 0, 2);
    assertThat(store.handlers().checkpoints("h2"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.tracked()).isTrue();
              assertThat(c.offset()).isEqualTo(2);
            });
    assertThat(store.handlers().checkpoints("h3"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.tracked()).isFalse();
              assertThat(c.lag()).isEqualTo(2);
            });
    assertThatThrownBy(() -> store.handlers().setCheckpoint("h1", r.streamId(), -1, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.handlers().setCheckpoint("h1", 424242, 0, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not exist");
  }

  @Test
  void anUndecodablePayloadFailsTheDelivery(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1))));
    db.execute("UPDATE eventstream.events SET payload = convert_to('{\"bad\":', 'UTF8')");
    EventDriver driver = recording("h1");
    try (OpenTx t = new OpenTx(ds)) {
      Delivery d = driver.acquire(t.tx, 1).get(0);
      assertThatThrownBy(() -> driver.handle(t.tx, d))
          .isInstanceOf(UndecodableMessageException.class);
    }
  }

  @Test
  void minimalConcurrencyLetsOneTransactionAcquireAtATime(DataSource ds) throws Exception {
    inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1))));
    inTx(ds, tx -> store.appendTo(tx, store.createStream(tx), List.of(new OrderPlaced("b", 1))));
    EventDriver minimal =
        EventDriver.builder(store)
            .handlerKey("serial")
            .on(OrderPlaced.class, (ctx, e) -> {})
            .concurrency(Concurrency.MINIMAL)
            .handlerLockWait(Duration.ofMillis(200))
            .build();
    try (OpenTx first = new OpenTx(ds);
        OpenTx second = new OpenTx(ds)) {
      List<Delivery> held = minimal.acquire(first.tx, 1);
      assertThat(held).hasSize(1);
      assertThat(minimal.acquire(second.tx, 1)).isEmpty(); // waited 200 ms, then gave up
      // The second transaction is still usable, and a handle without the lock is Busy.
      Delivery d = held.get(0);
      assertThat(minimal.handle(second.tx, d)).isInstanceOf(Outcome.Busy.class);
      assertThat(minimal.handle(first.tx, d)).isEqualTo(Outcome.HANDLED);
      minimal.completed(first.tx, List.of(d));
      first.commit();
      assertThat(minimal.acquire(second.tx, 1)).hasSize(1);
    }
  }

  @Test
  void builderRejectsBadOptions() {
    assertThatThrownBy(() -> EventDriver.builder(store).handlerKey(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerKey");
    assertThatThrownBy(
            () -> EventDriver.builder(store).on(Fixtures.Unregistered.class, (c, e) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not registered");
    assertThatThrownBy(
            () ->
                EventDriver.builder(store)
                    .on(Noise.class, (c, e) -> {})
                    .on(Noise.class, (c, e) -> {}))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> EventDriver.builder(store).streamsPerPoll(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("streamsPerPoll");
    assertThatThrownBy(() -> EventDriver.builder(store).handlerLockWait(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerLockWait");
    assertThatThrownBy(() -> EventDriver.builder(store).on(Noise.class, (c, e) -> {}).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("handlerKey");
    assertThatThrownBy(() -> EventDriver.builder(store).handlerKey("k").build())
        .isInstanceOf(IllegalStateException.class);
  }
}
