package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.messagepump.core.Backoff;
import org.messagepump.core.BusyException;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
class MessagePumpIT {

  private final List<MessagePump> pumps = new ArrayList<>();
  private TestDatabase db;

  @BeforeEach
  void schema(TestDatabase db) {
    this.db = db;
    db.execute("DROP TABLE IF EXISTS work, work_parked, effects");
    db.execute(TinyTable.SCHEMA);
    // No unique key on purpose: a duplicate delivery would show up as a second row.
    db.execute("CREATE TABLE effects (work_id bigint NOT NULL, node text NOT NULL)");
  }

  @AfterEach
  void closePumps() {
    pumps.forEach(MessagePump::close);
  }

  private MessagePump pump(
      String name, javax.sql.DataSource ds, TinyTableDriver driver, int workers, int batch) {
    MessagePump p =
        MessagePump.builder(ds)
            .name(name)
            .driver(driver)
            .workers(workers)
            .batchSize(batch)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(50), Duration.ofSeconds(2))
            .shutdownGrace(Duration.ofSeconds(5))
            .build();
    pumps.add(p);
    return p;
  }

  private static TinyTableDriver recordingDriver(String node) {
    return new TinyTableDriver(
        (tx, id, body) -> {
          tx.dsl().execute("INSERT INTO effects (work_id, node) VALUES (?, ?)", id, node);
          return Outcome.HANDLED;
        });
  }

  private void insertWork(int n) {
    db.execute("INSERT INTO work (body) SELECT 'job ' || g FROM generate_series(1, " + n + ") g");
  }

  @ParameterizedTest(name = "batchSize {0}")
  @ValueSource(ints = {1, 10})
  void twoPumpsWithEightWorkersHandleEveryRowExactlyOnce(int batchSize) {
    insertWork(5_000);
    HikariDataSource a = db.newDataSource("node-a", 10);
    HikariDataSource b = db.newDataSource("node-b", 10);
    pump("a", a, recordingDriver("a"), 8, batchSize).start();
    pump("b", b, recordingDriver("b"), 8, batchSize).start();
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() -> db.queryLong("SELECT count(*) FROM work") == 0);
    assertThat(db.queryLong("SELECT count(*) FROM effects")).isEqualTo(5_000);
    assertThat(db.queryLong("SELECT count(DISTINCT work_id) FROM effects")).isEqualTo(5_000);
    // Both processes took part.
    assertThat(db.queryLong("SELECT count(DISTINCT node) FROM effects")).isEqualTo(2);
  }

  @Test
  void aFailedDeliveryCommitsNoPartialWritesAndCountsTheFailure() {
    insertWork(1);
    AtomicInteger attempts = new AtomicInteger();
    TinyTableDriver driver =
        new TinyTableDriver(
            (tx, id, body) -> {
              attempts.incrementAndGet();
              tx.dsl().execute("INSERT INTO effects (work_id, node) VALUES (?, 'x')", id);
              throw new IllegalStateException("boom after a write");
            });
    MessagePump p = pump("failing", db.dataSource(), driver, 1, 1);
    p.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> attempts.get() >= 2);
    p.close();
    assertThat(db.queryLong("SELECT count(*) FROM effects")).isZero();
    assertThat(db.queryLong("SELECT failures FROM work")).isGreaterThanOrEqualTo(2);
  }

  @Test
  void busyKeepsTheFailureCountAndPostponesByTheBase() {
    insertWork(1);
    db.execute("UPDATE work SET failures = 3");
    AtomicInteger attempts = new AtomicInteger();
    TinyTableDriver driver =
        new TinyTableDriver(
            (tx, id, body) -> {
              attempts.incrementAndGet();
              throw new BusyException("downstream busy");
            });
    MessagePump p = pump("busy", db.dataSource(), driver, 1, 1);
    p.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> attempts.get() >= 3);
    p.close();
    assertThat(db.queryLong("SELECT failures FROM work")).isEqualTo(3);
    long delayMicros =
        db.queryLong(
            "SELECT (extract(epoch FROM due_at - postponed_at) * 1000000)::bigint FROM work");
    // postponed_at and due_at are two clock_timestamp() readings of one UPDATE: allow 1 ms.
    assertThat(delayMicros).isBetween(49_000L, 50_000L);
  }

  @Test
  void postponementDelayFollowsTheFormulaByTheDatabaseClock() {
    insertWork(8);
    // Row k has k-1 failures so far; after failing once more it has k.
    db.execute("UPDATE work SET failures = id - (SELECT min(id) FROM work)");
    ConcurrentHashMap<Long, Boolean> seen = new ConcurrentHashMap<>();
    TinyTableDriver driver =
        new TinyTableDriver(
            (tx, id, body) -> {
              seen.put(id, true);
              return Outcome.failed(new IllegalStateException("fail once"));
            });
    MessagePump p =
        MessagePump.builder(db.dataSource())
            .name("formula")
            .driver(driver)
            .workers(2)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofSeconds(1), Duration.ofSeconds(20))
            .build();
    pumps.add(p);
    p.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 8);
    p.close();
    Backoff backoff = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(20));
    try (var c = db.dataSource().getConnection();
        var s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT failures, (extract(epoch FROM due_at - postponed_at) * 1000000)::bigint FROM work")) {
      int rows = 0;
      while (rs.next()) {
        rows++;
        int failures = rs.getInt(1);
        long micros = rs.getLong(2);
        assertThat(failures).isBetween(1, 8);
        assertThat(micros)
            .as("delay after %d failures", failures)
            .isBetween(
                1_000_000L, TimeUnit.NANOSECONDS.toMicros(backoff.ceiling(failures).toNanos()));
      }
      assertThat(rows).isEqualTo(8);
    } catch (java.sql.SQLException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aTerminatedBackendMidHandleLosesNothing() throws Exception {
    insertWork(20);
    HikariDataSource victimPool = db.newDataSource("victim", 4);
    CountDownLatch inHandler = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger firstAttempts = new AtomicInteger();
    long firstId = db.queryLong("SELECT min(id) FROM work");
    TinyTableDriver driver =
        new TinyTableDriver(
            (tx, id, body) -> {
              tx.dsl().execute("INSERT INTO effects (work_id, node) VALUES (?, 'v')", id);
              if (id == firstId && firstAttempts.incrementAndGet() == 1) {
                inHandler.countDown();
                release.await(30, TimeUnit.SECONDS);
              }
              return Outcome.HANDLED;
            });
    MessagePump p = pump("victim", victimPool, driver, 2, 1);
    p.start();
    assertThat(inHandler.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(db.terminateBackends("victim")).isPositive();
    release.countDown();
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> db.queryLong("SELECT count(*) FROM work") == 0);
    assertThat(firstAttempts.get()).isGreaterThanOrEqualTo(2);
    assertThat(db.queryLong("SELECT count(*) FROM effects")).isEqualTo(20);
    assertThat(db.queryLong("SELECT count(DISTINCT work_id) FROM effects")).isEqualTo(20);
    assertThat(p.isRunning()).isTrue();
  }

  @Test
  void closeWithHandlersInFlightReturnsWithinTheGracePeriodAndLosesNothing() {
    insertWork(200);
    AtomicInteger started = new AtomicInteger();
    TinyTableDriver slow =
        new TinyTableDriver(
            (tx, id, body) -> {
              tx.dsl().execute("INSERT INTO effects (work_id, node) VALUES (?, 's')", id);
              started.incrementAndGet();
              Thread.sleep(id % 2 == 0 ? 100 : 30_000);
              return Outcome.HANDLED;
            });
    MessagePump p =
        MessagePump.builder(db.dataSource())
            .name("closing")
            .driver(slow)
            .workers(4)
            .pollInterval(Duration.ofMillis(50))
            .shutdownGrace(Duration.ofSeconds(2))
            .build();
    p.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> started.get() >= 6);
    long t0 = System.nanoTime();
    p.close();
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertThat(tookMs).isLessThanOrEqualTo(2_500);
    long left = db.queryLong("SELECT count(*) FROM work");
    long effects = db.queryLong("SELECT count(*) FROM effects");
    assertThat(left + effects).isEqualTo(200);
    assertThat(db.queryLong("SELECT count(*) FROM effects e JOIN work w ON w.id = e.work_id"))
        .isZero();
    // A fresh pump finishes the rest; every row ends with exactly one effect.
    pump("after", db.dataSource(), recordingDriver("after"), 4, 1).start();
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> db.queryLong("SELECT count(*) FROM work") == 0);
    assertThat(db.queryLong("SELECT count(DISTINCT work_id) FROM effects")).isEqualTo(200);
    assertThat(db.queryLong("SELECT count(*) FROM effects")).isEqualTo(200);
  }

  @Test
  void parksPastMaxFailuresAndCountsMetrics() {
    insertWork(3);
    long badId = db.queryLong("SELECT min(id) FROM work");
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    TinyTableDriver driver =
        new TinyTableDriver(
            (tx, id, body) -> {
              if (id == badId) {
                throw new IllegalArgumentException("cannot handle " + body);
              }
              return Outcome.HANDLED;
            });
    MessagePump p =
        MessagePump.builder(db.dataSource())
            .name("parking")
            .driver(driver)
            .workers(2)
            .maxFailures(3)
            .pollInterval(Duration.ofMillis(20))
            .backoff(Duration.ofMillis(10), Duration.ofMillis(50))
            .meterRegistry(registry)
            .build();
    pumps.add(p);
    p.start();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> db.queryLong("SELECT count(*) FROM work_parked") == 1);
    assertThat(db.queryLong("SELECT count(*) FROM work")).isZero();
    assertThat(db.queryLong("SELECT failures FROM work_parked")).isEqualTo(3);
    assertThat(
            registry
                .get("messagepump.deliveries")
                .tags("pump", "parking", "outcome", "handled")
                .counter()
                .count())
        .isEqualTo(2);
    assertThat(registry.get("messagepump.deliveries").tags("outcome", "failed").counter().count())
        .isEqualTo(2);
    assertThat(registry.get("messagepump.deliveries").tags("outcome", "parked").counter().count())
        .isEqualTo(1);
  }
}
