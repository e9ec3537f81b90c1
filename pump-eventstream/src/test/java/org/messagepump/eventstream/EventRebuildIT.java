package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.Table;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.eventstream.Fixtures.OpenTx;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Rebuilding a read model: {@code reset(tx, key)} and emptying the read model in one transaction,
 * while the pump runs and events keep coming, applies every event exactly once to the emptied read
 * model. And a bad argument to an operation in the caller's transaction leaves that transaction
 * usable, with nothing written.
 */
@ExtendWith(PostgresExtension.class)
class EventRebuildIT {

  private static final String KEY = "per-stream-counts";
  private static final int STREAMS = 16;
  private static final int WORKERS = 4;
  private static final int REBUILDS = 20;

  /** Deliveries to wait for between two rebuilds, so that each one empties a busy read model. */
  private static final int DELIVERIES_BETWEEN_REBUILDS = 15;

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension
  static final EventStoreFixture EVENTS =
      EventStoreFixture.of(CODEC)
          .table(
              "per_stream",
              "CREATE TABLE per_stream (stream_id bigint PRIMARY KEY, n bigint NOT NULL)");

  private final EventStore store = EVENTS.store();

  /** The projection: one row per stream counting the events applied, in the delivery's tx. */
  private EventDriver counting(AtomicLong handled, Duration heldStreamWait) {
    return store.driver(
        KEY,
        EventHandlers.builder()
            .on(
                OrderPlaced.class,
                (e, ctx) -> {
                  ctx.tx()
                      .dsl()
                      .execute(
                          "INSERT INTO per_stream (stream_id, n) VALUES (?, 1)"
                              + " ON CONFLICT (stream_id) DO UPDATE SET n = per_stream.n + 1",
                          ctx.streamId());
                  handled.incrementAndGet();
                })
            .build(),
        EventDriverOptions.defaults().withHeldStreamWait(heldStreamWait));
  }

  @Test
  void rebuildsUnderLoadApplyEveryEventExactlyOnce(DataSource ds, TestDatabase db)
      throws Exception {
    List<Long> streams = new ArrayList<>();
    for (int i = 0; i < STREAMS; i++) {
      streams.add(inTx(ds, tx -> store.createStream(tx)));
    }
    AtomicLong handled = new AtomicLong();
    AtomicBoolean appending = new AtomicBoolean(true);
    ExecutorService appender = Executors.newSingleThreadExecutor();
    List<Integer> resets = new ArrayList<>();
    long started = System.nanoTime();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name(KEY)
            .driver(counting(handled, EventDriverOptions.DEFAULT_HELD_STREAM_WAIT))
            .workers(WORKERS)
            .pollInterval(Duration.ofMillis(20))
            .backoff(Duration.ofMillis(10), Duration.ofMillis(100))
            .build()) {
      Future<Long> appended = appender.submit(() -> append(ds, streams, appending));
      pump.start();
      for (int i = 0; i < REBUILDS; i++) {
        long before = handled.get();
        await().atMost(WAIT).until(() -> handled.get() >= before + DELIVERIES_BETWEEN_REBUILDS);
        resets.add(rebuild(ds));
        // Never more: no stream's count is above its number of events at any time.
        assertThat(overCounted(db)).as("streams counted past their end").isEmpty();
      }
      appending.set(false);
      long events = appended.get(30, TimeUnit.SECONDS);
      await().atMost(WAIT).until(() -> store.operations().lag(KEY) == 0);
      long took = (System.nanoTime() - started) / 1_000_000;

      Map<Long, long[]> counts = countsAndEnds(db);
      System.out.printf(
          "%d rebuilds under load: %d events appended, %d deliveries, %d ms; rows reset %s%n",
          REBUILDS, events, handled.get(), took, resets);
      assertThat(counts).hasSize(STREAMS);
      List<String> wrong = new ArrayList<>();
      counts.forEach(
          (stream, c) -> {
            if (c[0] != c[1]) {
              wrong.add("stream " + stream + ": " + c[0] + " applied, " + c[1] + " events");
            }
          });
      assertThat(wrong).as("streams whose count is not their number of events").isEmpty();
      assertThat(counts.values().stream().mapToLong(c -> c[1]).sum()).isEqualTo(events);
      // The rebuilds did empty a read model that held events, and replayed it.
      assertThat(resets).allSatisfy(n -> assertThat(n).isPositive());
      assertThat(handled.get()).isGreaterThan(events);
    } finally {
      appending.set(false);
      appender.shutdownNow();
    }
  }

  /** One rebuild: reset, then empty the read model, in one transaction (docs/eventstream.md). */
  private int rebuild(DataSource ds) {
    return inTx(
        ds,
        tx -> {
          int n = store.operations().reset(tx, KEY);
          tx.dsl().execute("TRUNCATE per_stream");
          return n;
        });
  }

  /** Appends 1-3 events at a time to random streams until told to stop; returns how many. */
  private long append(DataSource ds, List<Long> streams, AtomicBoolean appending) {
    Random random = new Random(7);
    long total = 0;
    while (appending.get()) {
      int n = 1 + random.nextInt(3);
      List<Object> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        batch.add(new OrderPlaced("o-" + (total + i), (int) total + i));
      }
      long stream = streams.get(random.nextInt(streams.size()));
      inTx(ds, tx -> store.appendTo(tx, stream, batch));
      total += n;
    }
    return total;
  }

  /** Per stream: {events applied in the read model, events in the stream}. */
  private static Map<Long, long[]> countsAndEnds(TestDatabase db) throws Exception {
    Map<Long, long[]> out = new LinkedHashMap<>();
    try (Connection c = db.dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT s.id, coalesce(p.n, 0), s.next_offset FROM eventstream.streams s"
                    + " LEFT JOIN per_stream p ON p.stream_id = s.id ORDER BY s.id")) {
      while (rs.next()) {
        out.put(rs.getLong(1), new long[] {rs.getLong(2), rs.getLong(3)});
      }
    }
    return out;
  }

  private static List<Long> overCounted(TestDatabase db) throws Exception {
    List<Long> over = new ArrayList<>();
    countsAndEnds(db)
        .forEach(
            (stream, c) -> {
              if (c[0] > c[1]) {
                over.add(stream);
              }
            });
    return over;
  }

  @Test
  void aResetInTheCallersTransactionHoldsTheHandlerBackUntilItCommits(
      DataSource ds, TestDatabase db) throws Exception {
    long stream = inTx(ds, tx -> store.createStream(tx));
    inTx(ds, tx -> store.appendTo(tx, stream, List.of(new OrderPlaced("a", 1))));
    AtomicLong handled = new AtomicLong();
    PumpTester tester = PumpTester.builder(ds, counting(handled, Duration.ZERO)).build();
    assertThat(tester.drainUntilIdle()).hasSize(1);
    inTx(ds, tx -> store.appendTo(tx, stream, List.of(new OrderPlaced("b", 2))));

    try (OpenTx open = new OpenTx(ds)) {
      assertThat(store.operations().reset(open.tx, KEY)).isOne();
      open.tx.dsl().execute("TRUNCATE per_stream");
      // Both events are due (offset 1 before the reset, 0 and 1 after it), but the row is held.
      assertThat(tester.runOnce()).isEmpty();
      open.commit();
    }
    assertThat(tester.drainUntilIdle()).hasSize(2);
    assertThat(db.queryLong("SELECT n FROM per_stream WHERE stream_id = " + stream)).isEqualTo(2);
  }

  @Test
  void aConflictInTheCallersTransactionHoldsTheRowSoTheActualOffsetSucceeds(
      DataSource ds, TestDatabase db) throws Exception {
    long stream = inTx(ds, tx -> store.createStream(tx));
    store.operations().setCheckpoint(KEY, stream, 0, 3);
    try (OpenTx open = new OpenTx(ds)) {
      CheckpointConflictException conflict =
          catchThrowableOfType(
              CheckpointConflictException.class,
              () -> store.operations().setCheckpoint(open.tx, KEY, stream, 0, 1));
      assertThat(conflict.actualOffset()).isEqualTo(3);
      // No delivery (nor anyone else) can move it now.
      assertThatThrownBy(
              () ->
                  inTx(
                      ds,
                      tx ->
                          tx.dsl()
                              .execute(
                                  "SELECT 1 FROM eventstream.handler_checkpoints WHERE"
                                      + " handler_key = ? AND stream_id = ? FOR UPDATE NOWAIT",
                                  KEY,
                                  stream)))
          .isInstanceOfSatisfying(
              DataAccessException.class, e -> assertThat(e.sqlState()).isEqualTo("55P03"));
      store.operations().setCheckpoint(open.tx, KEY, stream, conflict.actualOffset(), 1);
      open.commit();
    }
    assertThat(
            db.queryLong(
                "SELECT checkpoint_offset FROM eventstream.handler_checkpoints WHERE stream_id = "
                    + stream))
        .isOne();
  }

  /**
   * The acquisition's wait for a held stream (every pending stream held) waits for one row and
   * holds no other while it waits. Here the row it waits for is caught up by its holder (a delivery
   * committing), while another transaction (an operation such as a reset, which locks the handler's
   * rows) holds the next pending row and then asks for the first one. When the first row fails its
   * re-check, PostgreSQL leaves it locked by whichever waiter locked it first: had the wait gone on
   * to the next row, it would have waited for the operation, and when it had locked the first row,
   * the operation for it: deadlock detected.
   */
  @Test
  void theWaitForAHeldStreamNeverHoldsARowWhileWaitingForAnother(DataSource ds, TestDatabase db)
      throws Exception {
    AtomicLong handled = new AtomicLong();
    // Longer than PostgreSQL's deadlock_timeout (1 s), so that a cycle is reported as one.
    PumpTester tester = PumpTester.builder(ds, counting(handled, Duration.ofSeconds(10))).build();
    long[] streams = twoPendingStreams(ds, tester);
    long s1 = streams[0];
    long s2 = streams[1];
    long first =
        inTx(
            ds,
            tx ->
                ((Number)
                        tx.dsl()
                            .fetchValue(
                                "SELECT stream_id FROM eventstream.handler_checkpoints"
                                    + " WHERE handler_key = ? ORDER BY turn LIMIT 1",
                                KEY))
                    .longValue());
    long next = first == s1 ? s2 : s1;
    String lockRow =
        "SELECT 1 FROM eventstream.handler_checkpoints WHERE handler_key = ? AND stream_id = ?"
            + " FOR UPDATE";
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (OpenTx delivery = new OpenTx(ds);
        OpenTx operation = new OpenTx(ds)) {
      delivery.tx.dsl().execute(lockRow, KEY, first);
      operation.tx.dsl().execute(lockRow, KEY, next);
      Future<List<PumpTester.Result>> polled = threads.submit(tester::runOnce);
      await().atMost(WAIT).until(() -> waitingForLocks(db) == 1);
      Future<?> operationTakesFirst =
          threads.submit(() -> operation.tx.dsl().execute(lockRow, KEY, first));
      await().atMost(WAIT).until(() -> waitingForLocks(db) == 2);
      // The delivery catches its stream up and commits: the first row is no longer pending.
      delivery
          .tx
          .dsl()
          .execute(
              "UPDATE eventstream.handler_checkpoints SET checkpoint_offset = stream_end"
                  + " WHERE handler_key = ? AND stream_id = ?",
              KEY,
              first);
      delivery.commit();

      // Whichever of the two then locks the first row (both were waiting for it), the operation
      // gets it: the acquisition waits for nothing else.
      operationTakesFirst.get(5, TimeUnit.SECONDS);
      operation.commit();
      // And the acquisition, having waited for the one row that is no longer ready, took nothing.
      assertThat(polled.get(5, TimeUnit.SECONDS)).isEmpty();
    } finally {
      threads.shutdownNow();
    }
    // Nothing was lost: the next stream is served once the operation is done.
    assertThat(tester.drainUntilIdle()).hasSize(1);
  }

  /**
   * While an operation holds the handler row (a reset in progress, which locks the handler's
   * checkpoint rows next), the acquisition does not wait for a held stream at all: the stream it
   * would wait for may be one the operation holds, and the acquisition may hold a row the operation
   * wants (a claim can leave a row locked without returning it). It ends the poll empty at once.
   */
  @Test
  void noWaitForAHeldStreamWhileAnOperationHoldsTheHandler(DataSource ds) throws Exception {
    AtomicLong handled = new AtomicLong();
    PumpTester tester = PumpTester.builder(ds, counting(handled, Duration.ofSeconds(10))).build();
    long[] streams = twoPendingStreams(ds, tester);
    long s1 = streams[0];
    long s2 = streams[1];
    try (OpenTx delivery = new OpenTx(ds);
        OpenTx operation = new OpenTx(ds)) {
      // A delivery holds one pending stream; the operation holds the handler row and the other.
      delivery
          .tx
          .dsl()
          .execute(
              "SELECT 1 FROM eventstream.handler_checkpoints WHERE handler_key = ? AND stream_id = ?"
                  + " FOR UPDATE",
              KEY,
              s1);
      operation
          .tx
          .dsl()
          .execute("SELECT 1 FROM eventstream.handlers WHERE handler_key = ? FOR UPDATE", KEY);
      operation
          .tx
          .dsl()
          .execute(
              "UPDATE eventstream.handler_checkpoints SET updated_at = now()"
                  + " WHERE handler_key = ? AND stream_id = ?",
              KEY,
              s2);
      long start = System.nanoTime();
      assertThat(tester.runOnce()).isEmpty();
      // Not the 10 s the wait for a held stream may last.
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
      operation.commit();
      delivery.commit();
    }
    // Nothing was lost: both streams are served once the others are done.
    assertThat(tester.drainUntilIdle()).hasSize(2);
    assertThat(handled.get()).isEqualTo(4);
  }

  /**
   * Two streams with one event each, handled by {@code tester}'s handler, then one more event each,
   * which the checkpoint rows know of (as the handler's next refresh would write the streams' new
   * ends; a refresh skips rows held by others, as the tests then hold them): both pending.
   */
  private long[] twoPendingStreams(DataSource ds, PumpTester tester) {
    long s1 = inTx(ds, tx -> store.createStream(tx));
    long s2 = inTx(ds, tx -> store.createStream(tx));
    for (long s : List.of(s1, s2)) {
      inTx(ds, tx -> store.appendTo(tx, s, List.of(new OrderPlaced("a", 1))));
    }
    assertThat(tester.drainUntilIdle()).hasSize(2);
    for (long s : List.of(s1, s2)) {
      inTx(ds, tx -> store.appendTo(tx, s, List.of(new OrderPlaced("b", 2))));
    }
    inTx(
        ds,
        tx ->
            tx.dsl()
                .execute(
                    "UPDATE eventstream.handler_checkpoints c SET stream_end = s.next_offset"
                        + " FROM eventstream.streams s WHERE s.id = c.stream_id"));
    return new long[] {s1, s2};
  }

  private static long waitingForLocks(TestDatabase db) throws Exception {
    return db.queryLong(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            + " AND datname = current_database()");
  }

  /** The recipes of docs/eventstream.md, "Rebuilding a read model", as written there. */
  @Test
  void theDocumentedJdbcAndJooqRecipesRebuild(DataSource dataSource, TestDatabase db)
      throws Exception {
    long stream = inTx(dataSource, tx -> store.createStream(tx));
    inTx(
        dataSource,
        tx ->
            store.appendTo(tx, stream, List.of(new OrderPlaced("a", 1), new OrderPlaced("b", 2))));
    AtomicLong handled = new AtomicLong();
    PumpTester tester = PumpTester.builder(dataSource, counting(handled, Duration.ZERO)).build();
    tester.drainUntilIdle();
    assertThat(db.queryLong("SELECT n FROM per_stream")).isEqualTo(2);
    EventStore store = this.store;
    Table<?> ORDERS_VIEW = DSL.table(DSL.name("per_stream"));

    // spotless:off
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.operations().reset(Tx.of(c), KEY);
      try (Statement s = c.createStatement()) {
        s.execute("TRUNCATE per_stream");
      }
      c.commit();                             // the empty read model and the reset, together
    }
    // spotless:on
    assertThat(db.queryLong("SELECT count(*) FROM per_stream")).isZero();
    tester.drainUntilIdle();
    assertThat(db.queryLong("SELECT n FROM per_stream")).isEqualTo(2);

    // spotless:off
    DSLContext dsl = DSL.using(dataSource, SQLDialect.POSTGRES);
    dsl.transaction(cfg -> {
      DSLContext t = cfg.dsl();
      t.connection(c -> store.operations().reset(Tx.of(c), KEY));
      t.truncate(ORDERS_VIEW).execute();
    });
    // spotless:on
    assertThat(db.queryLong("SELECT count(*) FROM per_stream")).isZero();
    assertThat(store.operations().checkpoints(KEY).get(0).offset()).isZero();
    tester.drainUntilIdle();
    assertThat(db.queryLong("SELECT n FROM per_stream")).isEqualTo(2);
    assertThat(handled.get()).isEqualTo(6);
  }

  @Test
  void aBadArgumentLeavesTheCallersTransactionUsableWithNothingWritten(
      DataSource ds, TestDatabase db) throws Exception {
    long stream = inTx(ds, tx -> store.createStream(tx));
    inTx(ds, tx -> store.appendTo(tx, stream, List.of(new OrderPlaced("o", 1))));
    EventOperations handlers = store.operations();
    try (OpenTx open = new OpenTx(ds)) {
      Tx tx = open.tx;
      tx.dsl().execute("INSERT INTO per_stream VALUES (1, 1)");

      assertThatThrownBy(() -> handlers.reset(tx, "")).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> handlers.reset(tx, "nul\0key"))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> handlers.reset(tx, "k".repeat(513)))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> handlers.reset(tx, null)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> handlers.reset(null, KEY)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> handlers.resume(tx, "", stream))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> handlers.resumeAll(tx, "nul\0key"))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> handlers.setCheckpoint(tx, KEY, stream, -1, 0))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> handlers.setCheckpoint(tx, KEY, stream, 0, -1))
          .isInstanceOf(IllegalArgumentException.class);
      // Found out by a read, before anything is locked or written.
      assertThatThrownBy(() -> handlers.setCheckpoint(tx, KEY, stream + 1000, 0, 1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("does not exist");
      // A conflict writes nothing either (not even the row of the untracked stream, nor a
      // placeholder for the handler that has never run).
      assertThatThrownBy(() -> handlers.setCheckpoint(tx, KEY, stream, 5, 1))
          .isInstanceOf(CheckpointConflictException.class);

      assertThat(tx.dsl().fetchValue("SELECT count(*) FROM per_stream")).isEqualTo(1L);
      assertThat(handlers.reset(tx, KEY)).isZero();
      tx.dsl().execute("INSERT INTO per_stream VALUES (2, 1)");
      open.commit();
    }
    assertThat(db.queryLong("SELECT count(*) FROM per_stream")).isEqualTo(2);
    assertThat(db.queryLong("SELECT count(*) FROM eventstream.handler_checkpoints")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM eventstream.handlers")).isZero();
  }

  @Test
  void aConnectionThatIsNoTransactionOrHasItsOwnSnapshotIsRefused(DataSource ds) throws Exception {
    EventOperations handlers = store.operations();
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(true);
      assertThatThrownBy(() -> handlers.reset(Tx.of(c), KEY))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("autocommit");
    }
    try (OpenTx open = new OpenTx(ds)) {
      open.connection.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      assertThatThrownBy(() -> handlers.reset(open.tx, KEY))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("READ COMMITTED");
      assertThat(open.tx.dsl().fetchValue("SELECT 1")).isEqualTo(1);
      open.connection.rollback();
      open.connection.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    }
  }
}
