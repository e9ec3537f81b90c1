package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.Limits;
import org.messagepump.core.Tx;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * One hostile delivery among nine good ones, one worker, a batch of ten, {@code maxFailures} 3:
 * whatever the hostile handler does, it ends parked after exactly three counted failures, was
 * acquired at most four times, and every good delivery is handled exactly once.
 */
@ExtendWith(PostgresExtension.class)
class HostileHandlersIT {

  private static final int MAX_FAILURES = 3;
  private static final long HOSTILE = 5;

  private final List<MessagePump> pumps = new ArrayList<>();
  private final AtomicInteger hostileCalls = new AtomicInteger();
  private TestDatabase db;

  /** What the hostile delivery's handler does. */
  interface Hostile {
    Outcome run(Tx tx, long id) throws Exception;
  }

  @BeforeEach
  void schema(TestDatabase db) {
    this.db = db;
    db.execute("DROP TABLE IF EXISTS work, work_parked, effects, once");
    db.execute(TinyTable.SCHEMA);
    db.execute("CREATE TABLE effects (work_id bigint NOT NULL, what text NOT NULL)");
    db.execute(
        "CREATE TABLE once (k int, CONSTRAINT once_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)");
    db.execute("INSERT INTO once VALUES (1)");
    db.execute("INSERT INTO work (body) SELECT 'job ' || g FROM generate_series(1, 10) g");
  }

  @AfterEach
  void close() {
    pumps.forEach(MessagePump::close);
  }

  private void run(Hostile hostile) {
    run(
        new TinyTableDriver(
            (tx, id, body) -> {
              if (id == HOSTILE) {
                hostileCalls.incrementAndGet();
                return hostile.run(tx, id);
              }
              tx.dsl().execute("INSERT INTO effects (work_id, what) VALUES (?, 'handled')", id);
              return Outcome.HANDLED;
            }));
  }

  private void run(Driver driver) {
    MessagePump p =
        MessagePump.builder(db.dataSource())
            .name("hostile")
            .driver(driver)
            .workers(1)
            .batchSize(10)
            .maxFailures(MAX_FAILURES)
            .pollInterval(Duration.ofMillis(20))
            .backoff(Duration.ofMillis(5), Duration.ofMillis(40))
            .build();
    pumps.add(p);
    p.start();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> db.queryLong("SELECT count(*) FROM work") == 0);
    p.close();
    assertThat(db.queryLong("SELECT count(*) FROM work_parked WHERE id = " + HOSTILE)).isOne();
    assertThat(db.queryLong("SELECT failures FROM work_parked WHERE id = " + HOSTILE))
        .isEqualTo(MAX_FAILURES);
    assertThat(db.queryLong("SELECT count(*) FROM work_parked")).isOne();
    assertThat(db.queryLong("SELECT count(DISTINCT work_id) FROM effects WHERE what = 'handled'"))
        .isEqualTo(9);
    assertThat(db.queryLong("SELECT count(*) FROM effects WHERE what = 'handled'")).isEqualTo(9);
    assertThat(hostileCalls.get()).isBetween(MAX_FAILURES, MAX_FAILURES + 1);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    + " AND state LIKE 'idle in transaction%'"))
        .isZero();
  }

  @Test
  void commitOnTheHandlersConnectionIsRefused() {
    run(
        (tx, id) -> {
          tx.dsl().execute("INSERT INTO effects (work_id, what) VALUES (?, 'hostile')", id);
          tx.connection().commit();
          return Outcome.HANDLED;
        });
    assertThat(db.queryLong("SELECT count(*) FROM effects WHERE what = 'hostile'")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM work_parked WHERE reason LIKE '%commit()%'"))
        .isOne();
  }

  @Test
  void rollbackAutoCommitCloseAbortAndUnwrapAreRefused() throws Exception {
    List<String> refused = new ArrayList<>();
    run(
        (tx, id) -> {
          Connection c = tx.connection();
          for (ThrowingRunnable r :
              List.<ThrowingRunnable>of(
                  c::rollback,
                  () -> c.setAutoCommit(true),
                  () -> c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE),
                  () -> c.abort(Runnable::run),
                  () -> c.unwrap(Connection.class))) {
            try {
              r.run();
            } catch (IllegalStateException e) {
              refused.add(e.getMessage());
            }
          }
          try (Connection closing = tx.connection()) {
            closing.getAutoCommit();
          }
          return Outcome.HANDLED;
        });
    assertThat(refused).hasSize(5 * MAX_FAILURES).allMatch(m -> m.contains("refused"));
  }

  @Test
  void aJooqTransactionInsideAHandlerIsASavepointNotACommit() {
    run(
        (tx, id) -> {
          tx.dsl()
              .transaction(
                  c ->
                      c.dsl()
                          .execute("INSERT INTO effects (work_id, what) VALUES (?, 'nested')", id));
          throw new IllegalStateException("fails after its nested transaction");
        });
    assertThat(db.queryLong("SELECT count(*) FROM effects WHERE what = 'nested'")).isZero();
  }

  @Test
  void aCommitOnThePhysicalConnectionIsDetected() {
    run(
        (tx, id) -> {
          try (Statement s = tx.connection().createStatement()) {
            s.getConnection().commit();
          }
          return Outcome.HANDLED;
        });
  }

  @Test
  void anotherConnectionsLostConnectionIsAnOrdinaryFailure() {
    run(
        (tx, id) -> {
          throw new SQLException("reporting database is down", "08006");
        });
  }

  @Test
  void aStackOverflowIsCountedAndParks() {
    run((tx, id) -> recurse(0));
  }

  private static Outcome recurse(int depth) {
    return recurse(depth + 1) == null ? Outcome.HANDLED : null;
  }

  @Test
  void anInterruptOutsideShutdownIsAFailure() {
    run(
        (tx, id) -> {
          throw new InterruptedException("handler's own interrupt");
        });
  }

  @Test
  void aReasonWithNulAndControlCharactersIsStoredSanitized() {
    run(
        (tx, id) -> {
          throw new IllegalStateException("bad\u0000byte\u0007 and " + "x".repeat(5_000));
        });
    assertThat(
            db.queryLong(
                "SELECT length(reason) FROM work_parked WHERE id = "
                    + HOSTILE
                    + " AND reason LIKE '%bad\uFFFDbyte\uFFFD%'"))
        .isLessThanOrEqualTo(Limits.MAX_REASON_CHARS + 100);
  }

  @Test
  void aSwallowedDatabaseErrorIsAFailure() {
    run(
        (tx, id) -> {
          try {
            tx.dsl().execute("SELECT 1/0");
          } catch (RuntimeException ignored) {
            // a careless handler
          }
          return Outcome.HANDLED;
        });
  }

  @Test
  void aCommitThatFailsByADeferredConstraintParksTheCulpritOnly() {
    run(
        (tx, id) -> {
          tx.dsl().execute("INSERT INTO once VALUES (1)");
          return Outcome.HANDLED;
        });
  }

  @Test
  void aParkTheDatabaseRefusesFallsBackToAPlainReason() {
    Driver inner =
        new TinyTableDriver(
            (tx, id, body) -> {
              if (id == HOSTILE) {
                hostileCalls.incrementAndGet();
                throw new IllegalStateException("always fails");
              }
              tx.dsl().execute("INSERT INTO effects (work_id, what) VALUES (?, 'handled')", id);
              return Outcome.HANDLED;
            });
    run(
        new ForwardingDriver(inner) {
          @Override
          public void park(Tx tx, Delivery d, int failures, String reason) throws SQLException {
            if (!reason.startsWith("parked after")) {
              tx.dsl().execute("SELECT 1/0"); // the database refuses the first form
            }
            super.park(tx, d, failures, reason);
          }
        });
    assertThat(db.queryLong("SELECT count(*) FROM work_parked WHERE reason LIKE 'parked after 3%'"))
        .isOne();
  }

  @Test
  void aPostponementTheDatabaseRefusesIsCountedInAFreshTransaction() {
    Driver inner =
        new TinyTableDriver(
            (tx, id, body) -> {
              if (id == HOSTILE) {
                hostileCalls.incrementAndGet();
                throw new IllegalStateException("always fails");
              }
              tx.dsl().execute("INSERT INTO effects (work_id, what) VALUES (?, 'handled')", id);
              return Outcome.HANDLED;
            });
    AtomicInteger refusals = new AtomicInteger();
    run(
        new ForwardingDriver(inner) {
          @Override
          public void postpone(Tx tx, Delivery d, int failures, Duration delay)
              throws SQLException {
            // Refused twice in the batch's transaction (first form and fallback); the fresh
            // transaction's record succeeds.
            if (refusals.incrementAndGet() % 3 != 0) {
              tx.dsl().execute("SELECT 1/0");
            }
            super.postpone(tx, d, failures, delay);
          }
        });
  }

  @Test
  void batchSizeIsCapped() {
    MessagePump.Builder b = MessagePump.builder(db.dataSource());
    assertThatThrownBy(() -> b.batchSize(Limits.MAX_BATCH_SIZE + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("64");
    b.batchSize(Limits.MAX_BATCH_SIZE);
  }

  interface ThrowingRunnable {
    void run() throws Exception;
  }
}
