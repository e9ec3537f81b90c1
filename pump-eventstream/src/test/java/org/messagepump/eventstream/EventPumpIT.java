package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** The driver under a running {@link MessagePump}: failures, parking, concurrency, replay. */
@ExtendWith(PostgresExtension.class)
class EventPumpIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();

  private static MessagePump.Builder pump(DataSource ds, EventDriver driver) {
    return EventStoreFixture.pump(ds, driver).workers(4);
  }

  /** Appends {@code perStream} events to each of {@code streams} new streams. */
  private List<Long> streams(DataSource ds, int streams, int perStream, String prefix) {
    List<Long> ids = new ArrayList<>();
    for (int s = 0; s < streams; s++) {
      int stream = s;
      ids.add(
          inTx(
              ds,
              tx -> {
                long id = store.createStream(tx);
                List<Object> events = new ArrayList<>();
                for (int i = 0; i < perStream; i++) {
                  events.add(new OrderPlaced(prefix + stream + "-" + i, i));
                }
                store.appendTo(tx, id, events);
                return id;
              }));
    }
    return ids;
  }

  @Test
  void aFailingStreamIsPostponedThenParkedForThatHandlerOnlyAndResumes(DataSource ds) {
    List<Long> ids = streams(ds, 3, 5, "s");
    long poisoned = ids.get(0);
    AtomicBoolean healed = new AtomicBoolean();
    Map<String, List<Long>> seen = new ConcurrentHashMap<>();
    EventDriver flaky =
        store.driver(
            "flaky",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      if (e.orderId().equals("s0-2") && !healed.get()) {
                        throw new IllegalStateException("poison " + e.orderId());
                      }
                      seen.computeIfAbsent(
                              "flaky:" + ctx.streamId(), k -> new CopyOnWriteArrayList<>())
                          .add(ctx.offset());
                    })
                .build());
    EventDriver steady =
        store.driver(
            "steady",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) ->
                        seen.computeIfAbsent(
                                "steady:" + ctx.streamId(), k -> new CopyOnWriteArrayList<>())
                            .add(ctx.offset()))
                .build());
    try (MessagePump p1 = pump(ds, flaky).maxFailures(3).build();
        MessagePump p2 = pump(ds, steady).build()) {
      p1.start();
      p2.start();
      await().atMost(WAIT).until(() -> store.operations().parked("flaky").size() == 1);
      Checkpoint parked = store.operations().parked("flaky").get(0);
      assertThat(parked.streamId()).isEqualTo(poisoned);
      assertThat(parked.offset()).isEqualTo(2);
      assertThat(parked.failures()).isEqualTo(3);
      assertThat(parked.parkedReason()).contains("poison s0-2");
      // Other streams and the other handler keep flowing.
      await()
          .atMost(WAIT)
          .until(
              () ->
                  seen.getOrDefault("flaky:" + ids.get(1), List.of()).size() == 5
                      && seen.getOrDefault("flaky:" + ids.get(2), List.of()).size() == 5
                      && ids.stream()
                          .allMatch(
                              id -> seen.getOrDefault("steady:" + id, List.of()).size() == 5));
      assertThat(seen.get("flaky:" + poisoned)).containsExactly(0L, 1L);
      assertThat(store.operations().parked("steady")).isEmpty();
      assertThat(store.operations().lag("flaky")).isEqualTo(3);

      healed.set(true);
      assertThat(store.operations().resume("flaky", poisoned)).isTrue();
      await().atMost(WAIT).until(() -> seen.get("flaky:" + poisoned).size() == 5);
      assertThat(seen.get("flaky:" + poisoned)).containsExactly(0L, 1L, 2L, 3L, 4L);
      await().atMost(WAIT).until(() -> store.operations().lag("flaky") == 0);
    }
  }

  @Test
  void minimalConcurrencyNeverRunsTwoDeliveriesAtOnce(TestDatabase db) {
    assertThat(maxConcurrent(db, Concurrency.MINIMAL)).isEqualTo(1);
  }

  @Test
  void maximalConcurrencyHandlesStreamsInParallel(TestDatabase db) {
    assertThat(maxConcurrent(db, Concurrency.MAXIMAL)).isGreaterThan(1);
  }

  private int maxConcurrent(TestDatabase db, Concurrency concurrency) {
    DataSource ds = db.dataSource();
    streams(ds, 6, 4, "c");
    AtomicInteger running = new AtomicInteger();
    AtomicInteger max = new AtomicInteger();
    AtomicInteger handled = new AtomicInteger();
    EventDriver driver =
        store.driver(
            "concurrency-" + concurrency,
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      int now = running.incrementAndGet();
                      max.accumulateAndGet(now, Math::max);
                      try {
                        // Give other workers the time to overlap (not needed for correctness).
                        ctx.tx().dsl().execute("SELECT pg_sleep(0.02)");
                      } finally {
                        running.decrementAndGet();
                      }
                      handled.incrementAndGet();
                    })
                .build(),
            EventDriverOptions.defaults().withConcurrency(concurrency));
    // Two pumps: "two processes" of the same handler.
    try (MessagePump a = pump(ds, driver).name("a").build();
        MessagePump b = pump(ds, driver).name("b").build()) {
      a.start();
      b.start();
      await().atMost(WAIT).until(() -> handled.get() >= 24);
    }
    assertThat(handled.get()).isEqualTo(24);
    return max.get();
  }

  @Test
  void resetReplaysEveryEvent(DataSource ds) {
    streams(ds, 3, 4, "r");
    List<String> seen = new CopyOnWriteArrayList<>();
    EventDriver driver =
        store.driver(
            "replayed",
            EventHandlers.builder()
                .on(OrderPlaced.class, (e, ctx) -> seen.add(e.orderId()))
                .build());
    try (MessagePump p = pump(ds, driver).batchSize(4).build()) {
      p.start();
      await().atMost(WAIT).until(() -> seen.size() == 12);
      // Wait for the last delivery to commit (the list is written before the commit).
      await()
          .atMost(WAIT)
          .until(
              () ->
                  store.operations().checkpoints("replayed").stream()
                      .allMatch(c -> c.tracked() && c.lag() == 0));
      assertThat(store.operations().reset("replayed")).isEqualTo(3);
      await().atMost(WAIT).until(() -> seen.size() == 24);
      assertThat(seen.subList(12, 24)).containsExactlyInAnyOrderElementsOf(seen.subList(0, 12));
      assertThat(seen.stream().distinct().count()).isEqualTo(12);
    }
  }
}
