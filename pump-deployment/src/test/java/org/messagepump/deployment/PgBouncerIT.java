package org.messagepump.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.chaos.Work;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.EventOperations;

/**
 * Every driver through a real PgBouncer (Debian's 1.18) in transaction pooling mode: migrations (a
 * session advisory lock), the three pumps draining with {@code prepareThreshold=0}, and LISTEN,
 * which needs the direct connection of {@code notificationsDataSource}.
 */
class PgBouncerIT {

  /** Messages (all kinds together) the drain test writes through PgBouncer. */
  private static final int DRAIN_SAMPLE = 3_000;

  private static HikariDataSource bouncer;
  private static HikariDataSource direct;

  @BeforeAll
  static void startCluster() {
    Cluster.start();
    Cluster.run("wait-healthy", "180");
    Cluster.run("bouncer");
    bouncer = Cluster.pool(Cluster.bouncerUrl(), "admin-bouncer", 6);
    // One LISTEN connection per pump: six pumps, and room for the test's own queries.
    direct = Cluster.pool(Cluster.multiHostUrl(), "admin-direct", 8);
  }

  @AfterAll
  static void close() {
    if (bouncer != null) {
      bouncer.close();
    }
    if (direct != null) {
      direct.close();
    }
  }

  @Test
  void concurrentMigrationsThroughPgBouncerFinishAndLeaveNoAdvisoryLock() throws Exception {
    try (Connection c = direct.getConnection()) {
      c.createStatement()
          .execute("DROP SCHEMA IF EXISTS bq_commands, bq_events, bq_balancer CASCADE");
    }
    // Three callers on a pool of six: each call holds two connections (docs/deployment.md).
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<Integer>> runs = new ArrayList<>();
      for (int round = 0; round < 2; round++) {
        runs.add(pool.submit(() -> CommandOperations.of(bouncer, "bq_commands").migrate()));
        runs.add(pool.submit(() -> EventOperations.of(bouncer, "bq_events").migrate()));
        runs.add(pool.submit(() -> BalancerOperations.of(bouncer, "bq_balancer").migrate()));
      }
      int applied = 0;
      for (Future<Integer> f : runs) {
        applied += f.get(90, TimeUnit.SECONDS);
      }
      assertThat(applied).as("migrations applied once each").isPositive();
      // Once more, one after the other: a lock left behind on a server connection would hang here.
      assertThat(
              pool.submit(() -> CommandOperations.of(bouncer, "bq_commands").migrate())
                  .get(30, TimeUnit.SECONDS))
          .isZero();
    } finally {
      pool.shutdownNow();
    }
    assertThat(queryLong(direct, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"))
        .as("advisory locks left on PgBouncer's server connections")
        .isZero();
  }

  @Test
  void everyDriverDrainsThroughPgBouncerWithNothingLostOrDuplicated() throws Exception {
    Workload w = new Workload(bouncer);
    Ledger ledger = w.ledger();
    long acknowledged;
    long producedAt;
    long drainedAfterMs;
    try {
      w.startPumps(Cluster.bouncerUrl(), 2, 2, b -> b.notificationsDataSource(direct));
      // A sample of a few thousand messages, however fast the loaded machine writes; two minutes
      // at most (the figure reports what was reached).
      w.startProducing(50, 10);
      long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
      while (w.produced() < DRAIN_SAMPLE && System.nanoTime() < deadline) {
        Cluster.sleep(250);
      }
      acknowledged = w.stopProducing();
      producedAt = System.nanoTime();
      await()
          .atMost(Duration.ofMinutes(3))
          .pollInterval(Duration.ofMillis(250))
          .until(() -> w.pending() == 0 && ledger.figures().handled() >= acknowledged);
      drainedAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - producedAt);
    } finally {
      w.close();
    }
    Ledger.Figures f = ledger.figures();
    ChaosReport.of("pgbouncer-all-drivers")
        .put("pgbouncer", "1.18 transaction pooling, prepareThreshold=0")
        .put(f)
        .put("orderViolations", ledger.orderViolations())
        .put("failedWrites", w.failedWrites())
        .put("drainedAfterLastWriteMs", drainedAfterMs)
        .put("producerRounds", w.rounds())
        .put("slowestProducerRoundMs", w.slowestRoundMillis())
        .write();
    assertThat(f.acknowledged()).isEqualTo(acknowledged).isPositive();
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(ledger.orderViolations()).as("order violations").isZero();
    assertThat(w.failedWrites()).as("failed writes").isZero();
  }

  @Test
  void listenNeedsTheDirectConnectionPollingOtherwise() throws Exception {
    CommandOperations.of(bouncer).migrate();
    CommandQueue queue = CommandQueue.create(bouncer, Work.CODEC);
    long throughBouncer = wakeMillis(queue, null);
    long throughDirect = wakeMillis(queue, direct);
    ChaosReport.of("pgbouncer-listen")
        .put("wakeThroughPgBouncerMs", throughBouncer)
        .put("wakeThroughDirectMs", throughDirect)
        .put("pollInterval", Duration.ofSeconds(5))
        .write();
    // Through PgBouncer the LISTEN is lost with its transaction: the pump finds the command by
    // polling only. The direct connection wakes it at once.
    assertThat(throughBouncer).isGreaterThanOrEqualTo(2_000);
    assertThat(throughDirect).isLessThan(2_000);
  }

  @Test
  void serverSidePreparedStatementsNeedPrepareThresholdZero() throws Exception {
    int errorsDefault = preparedStatementErrors("prepareThreshold=5");
    int errorsZero = preparedStatementErrors("prepareThreshold=0");
    ChaosReport.of("pgbouncer-prepared-statements")
        .put("errorsWithPrepareThreshold5", errorsDefault)
        .put("errorsWithPrepareThreshold0", errorsZero)
        .write();
    assertThat(errorsZero).isZero();
  }

  /** Enqueues one command and returns how long an idle pump with a 5 s poll took to handle it. */
  private static long wakeMillis(CommandQueue queue, HikariDataSource listenOn) throws Exception {
    CountDownLatch handled = new CountDownLatch(1);
    try (HikariDataSource pool = Cluster.pool(Cluster.bouncerUrl(), "listen-test", 4)) {
      MessagePump.Builder b =
          MessagePump.builder(pool)
              .name("listen-test")
              .driver(
                  CommandQueue.create(pool, Work.CODEC)
                      .driver(
                          CommandHandlers.builder()
                              .on(Work.class, (m, ctx) -> handled.countDown())
                              .build()))
              .workers(1)
              .pollInterval(Duration.ofSeconds(5));
      if (listenOn != null) {
        b.notificationsDataSource(listenOn);
      }
      try (MessagePump pump = b.build()) {
        pump.start();
        // Past the first poll and the LISTEN (pacing, not correctness: the figure is a duration).
        Cluster.sleep(1_500);
        long t0 = System.nanoTime();
        queue.enqueue(new Work(1));
        assertThat(handled.await(30, TimeUnit.SECONDS)).isTrue();
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      }
    }
  }

  /** Eight threads run the same statement 100 times each, in transactions, through PgBouncer. */
  private static int preparedStatementErrors(String option) throws Exception {
    AtomicInteger errors = new AtomicInteger();
    String url = Cluster.bouncerUrl().replace("prepareThreshold=0", option);
    try (HikariDataSource pool = Cluster.pool(url, "prepare-test", 8)) {
      ExecutorService ex = Executors.newFixedThreadPool(8);
      for (int t = 0; t < 8; t++) {
        ex.submit(
            () -> {
              for (int i = 0; i < 100; i++) {
                try (Connection c = pool.getConnection()) {
                  c.setAutoCommit(false);
                  try (PreparedStatement ps = c.prepareStatement("SELECT ?::int + 1")) {
                    ps.setInt(1, i);
                    try (ResultSet rs = ps.executeQuery()) {
                      rs.next();
                    }
                  }
                  c.commit();
                } catch (SQLException e) {
                  errors.incrementAndGet();
                }
              }
            });
      }
      ex.shutdown();
      assertThat(ex.awaitTermination(2, TimeUnit.MINUTES)).isTrue();
    }
    return errors.get();
  }

  private static long queryLong(HikariDataSource ds, String sql) {
    try (Connection c = ds.getConnection();
        ResultSet rs = c.createStatement().executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }
}
