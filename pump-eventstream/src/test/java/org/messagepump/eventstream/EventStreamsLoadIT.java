package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.Noise;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.Fixtures.OrderShipped;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * 4 writers append 20,000 events while 3 handlers with 4 workers each consume: every handler sees
 * every event of its types exactly once, in offset order within each stream, although writers hold
 * their transactions open while readers run.
 */
@ExtendWith(PostgresExtension.class)
class EventStreamsLoadIT {

  @RegisterExtension
  static final EventStoreFixture FIXTURE =
      EventStoreFixture.of(CODEC)
          .table(
              "seen",
              "CREATE TABLE seen (seq bigserial PRIMARY KEY, handler text NOT NULL, stream_id"
                  + " bigint NOT NULL, stream_offset bigint NOT NULL, message_id uuid NOT NULL)");

  private static final int WRITERS = 4;
  private static final int EVENTS = 20_000;
  private static final int MID_RUN_EVENTS = 50;

  @Test
  void everyHandlerSeesEveryEventOfItsTypesExactlyOnceInStreamOrder(TestDatabase db)
      throws Exception {
    DataSource ds = db.dataSource();
    EventStore store = FIXTURE.store();

    Map<String, List<String>> handlerTypes =
        Map.of(
            "all", List.of("test.OrderPlaced", "test.OrderShipped", "test.Noise"),
            "placed", List.of("test.OrderPlaced"),
            "orders", List.of("test.OrderPlaced", "test.OrderShipped"));
    List<MessagePump> pumps = new ArrayList<>();
    pumps.add(
        pump(
            ds,
            store.driver(
                "all",
                EventHandlers.builder()
                    .on(OrderPlaced.class, this::record)
                    .on(OrderShipped.class, this::record)
                    .on(Noise.class, this::record)
                    .build()),
            16));
    pumps.add(
        pump(
            ds,
            store.driver(
                "placed", EventHandlers.builder().on(OrderPlaced.class, this::record).build()),
            8));
    pumps.add(
        pump(
            ds,
            store.driver(
                "orders",
                EventHandlers.builder()
                    .on(OrderPlaced.class, this::record)
                    .project(
                        OrderShipped.class,
                        (e, ctx) -> {
                          record(e, ctx);
                          return ctx.nextOffset();
                        })
                    .build()),
            10));
    pumps.forEach(MessagePump::start);

    long start = System.nanoTime();
    ExecutorService writers = Executors.newFixedThreadPool(WRITERS);
    AtomicInteger appended = new AtomicInteger();
    List<Future<?>> done = new ArrayList<>();
    try {
      for (int w = 0; w < WRITERS; w++) {
        int writer = w;
        done.add(writers.submit(() -> write(ds, store, writer, EVENTS / WRITERS, appended)));
      }
      // A stream created mid-run is picked up.
      await().atMost(Duration.ofSeconds(120)).until(() -> appended.get() > EVENTS / 2);
      long midRun = inTx(ds, tx -> store.createStream(tx));
      for (int i = 0; i < MID_RUN_EVENTS; i += 10) {
        List<Object> batch = new ArrayList<>();
        for (int j = 0; j < 10; j++) {
          batch.add(new OrderPlaced("mid-" + (i + j), i + j));
        }
        inTx(ds, tx -> store.appendTo(tx, midRun, batch));
      }
      for (Future<?> f : done) {
        f.get(180, TimeUnit.SECONDS);
      }
      System.out.printf(
          "writers done after %d ms; seen so far: %d%n",
          (System.nanoTime() - start) / 1_000_000, db.queryLong("SELECT count(*) FROM seen"));

      assertThat(db.queryLong("SELECT count(*) FROM eventstream.events"))
          .isEqualTo(EVENTS + MID_RUN_EVENTS);
      for (Map.Entry<String, List<String>> h : handlerTypes.entrySet()) {
        String types = "('" + String.join("','", h.getValue()) + "')";
        long expected =
            db.queryLong("SELECT count(*) FROM eventstream.events WHERE type IN " + types);
        await()
            .atMost(Duration.ofSeconds(180))
            .pollInterval(Duration.ofMillis(250))
            .until(
                () ->
                    db.queryLong("SELECT count(*) FROM seen WHERE handler = '" + h.getKey() + "'")
                        >= expected);
        // Exactly once: no duplicates and nothing of its types missing.
        assertThat(
                db.queryLong(
                    "SELECT count(*) - count(DISTINCT message_id) FROM seen WHERE handler = '"
                        + h.getKey()
                        + "'"))
            .as("duplicates of %s", h.getKey())
            .isZero();
        assertThat(
                db.queryLong(
                    "SELECT count(*) FROM eventstream.events e WHERE e.type IN "
                        + types
                        + " AND NOT EXISTS (SELECT 1 FROM seen s WHERE s.handler = '"
                        + h.getKey()
                        + "' AND s.message_id = e.message_id)"))
            .as("missed by %s", h.getKey())
            .isZero();
        assertThat(
                db.queryLong(
                    "SELECT count(*) FROM seen s JOIN eventstream.events e USING (message_id)"
                        + " WHERE s.handler = '"
                        + h.getKey()
                        + "' AND e.type NOT IN "
                        + types))
            .isZero();
        // The stream created mid-run (writers appended to it too) is read like the others.
        long midRunSeen =
            db.queryLong(
                "SELECT count(*) FROM seen WHERE handler = '"
                    + h.getKey()
                    + "' AND stream_id = "
                    + midRun);
        assertThat(midRunSeen)
            .isEqualTo(
                db.queryLong(
                    "SELECT count(*) FROM eventstream.events WHERE stream_id = "
                        + midRun
                        + " AND type IN "
                        + types))
            .isGreaterThanOrEqualTo(h.getKey().equals("all") ? MID_RUN_EVENTS : 1);
      }
      System.out.printf("handlers done after %d ms%n", (System.nanoTime() - start) / 1_000_000);
      // In offset order within each stream, for each handler.
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM (SELECT stream_offset, lag(stream_offset) OVER (PARTITION"
                      + " BY handler, stream_id ORDER BY seq) AS prev FROM seen) x WHERE prev >="
                      + " stream_offset"))
          .isZero();
      assertThat(db.queryLong("SELECT count(*) FROM eventstream.streams")).isGreaterThan(1);
      for (String h : handlerTypes.keySet()) {
        await().atMost(Duration.ofSeconds(60)).until(() -> store.operations().lag(h) == 0);
      }
    } finally {
      writers.shutdownNow();
      pumps.forEach(MessagePump::close);
    }
  }

  private static MessagePump pump(DataSource ds, EventDriver driver, int batchSize) {
    return MessagePump.builder(ds)
        .name(driver.handlerKey())
        .driver(driver)
        .workers(4)
        .batchSize(batchSize)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(20), Duration.ofMillis(200))
        .build();
  }

  private void record(Object event, EventContext ctx) throws SQLException {
    try (PreparedStatement ps =
        ctx.tx()
            .connection()
            .prepareStatement(
                "INSERT INTO seen (handler, stream_id, stream_offset, message_id) VALUES (?, ?, ?,"
                    + " ?::uuid)")) {
      ps.setString(1, ctx.handlerKey());
      ps.setLong(2, ctx.streamId());
      ps.setLong(3, ctx.offset());
      ps.setString(4, ctx.messageId());
      ps.executeUpdate();
    }
  }

  /** Appends {@code count} events in batches of 1-10, holding each transaction open a little. */
  private static Void write(
      DataSource ds, EventStore store, int writer, int count, AtomicInteger appended) {
    Random random = new Random(writer);
    int written = 0;
    while (written < count) {
      int n = Math.min(count - written, 1 + random.nextInt(10));
      List<Object> batch = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        int k = written + i;
        int kind = random.nextInt(4);
        batch.add(
            kind < 2
                ? new OrderPlaced("w" + writer + "-" + k, k)
                : kind == 2 ? new OrderShipped("w" + writer + "-" + k) : new Noise(k));
      }
      inTx(
          ds,
          tx -> {
            store.append(tx, batch);
            // Keep the stream locked and the events uncommitted while the readers run.
            tx.dsl().execute("SELECT pg_sleep(0.002)");
            return null;
          });
      written += n;
      appended.addAndGet(n);
    }
    return null;
  }
}
