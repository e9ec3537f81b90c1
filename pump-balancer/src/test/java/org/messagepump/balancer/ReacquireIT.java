package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.core.spi.Delivery;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * {@link BalancerDriver#reacquire}: a delivery whose batch cannot commit (a deferred constraint its
 * handler violates) still has its failure counted, so its key parks at {@code maxFailures} instead
 * of coming back for ever.
 */
@ExtendWith(PostgresExtension.class)
class ReacquireIT {

  private static final int MAX_FAILURES = 3;

  @RegisterExtension
  static final BalancerFixture BALANCER =
      BalancerFixture.create()
          .table(
              "reacquire_written",
              "CREATE TABLE reacquire_written (group_name text NOT NULL, v text NOT NULL,"
                  + " CONSTRAINT reacquire_written_unique UNIQUE (group_name, v)"
                  + " DEFERRABLE INITIALLY DEFERRED)");

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A group whose key "bad" has one message whose handler writes a value that is already there
   * (caught only at commit), and keys good-0..good-4 whose handlers write new values.
   */
  private static BalancerDriver driver(
      TestDatabase db, String group, Map<String, AtomicInteger> calls) {
    db.execute(
        "INSERT INTO reacquire_written (group_name, v) VALUES ('" + group + "', 'already there')");
    MessageBalancer b = MessageBalancer.create(db.dataSource(), group);
    b.storeMessage("bad", bytes("already there"));
    for (int i = 0; i < 5; i++) {
      b.storeMessage("good-" + i, bytes("good-" + i));
    }
    return b.driver(
        BalancedHandlers.builder()
            .on(
                (m, ctx) -> {
                  calls
                      .computeIfAbsent(ctx.partitionKey(), k -> new AtomicInteger())
                      .incrementAndGet();
                  try (PreparedStatement ps =
                      ctx.tx()
                          .connection()
                          .prepareStatement(
                              "INSERT INTO reacquire_written (group_name, v) VALUES (?, ?)")) {
                    ps.setString(1, ctx.group());
                    ps.setString(2, new String(m.content(), StandardCharsets.UTF_8));
                    ps.executeUpdate();
                  }
                  return Result.ok();
                })
            .build());
  }

  private static PumpTester tester(DataSource ds, BalancerDriver driver) {
    return PumpTester.builder(ds, driver)
        .batchSize(1)
        .maxFailures(MAX_FAILURES)
        .backoff(Pumps.TINY, Pumps.TINY)
        .build();
  }

  /**
   * Every commit of "bad" fails (a new tester per poll, so the pump never learns to check deferred
   * constraints in the delivery's savepoint): each failure is counted in a fresh transaction
   * through reacquire, and the key parks at maxFailures. Without reacquire it would come back
   * uncounted for ever.
   */
  @Test
  void aKeyWhoseCommitAlwaysFailsIsCountedThroughReacquireAndParks(TestDatabase db) {
    DataSource ds = db.dataSource();
    Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    BalancerDriver driver = driver(db, "reacquire-fresh", calls);
    MessageBalancer b = MessageBalancer.create(ds, "reacquire-fresh");
    List<PumpTester.Result> results = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      List<PumpTester.Result> r = tester(ds, driver).runOnce();
      if (r.isEmpty()) {
        break;
      }
      results.addAll(r);
      if (Pumps.key(r.get(0)).equals("bad")) {
        assertThat(r.get(0).kind()).isEqualTo(Kind.ABANDONED);
        assertThat(r.get(0).cause()).hasMessageContaining("reacquire_written_unique");
        // Counted in its own transaction at once.
        int counted = (int) results.stream().filter(x -> Pumps.key(x).equals("bad")).count();
        assertThat(b.operations().partitionStats(b.group(), "bad").orElseThrow().failures())
            .isEqualTo(counted);
      }
    }
    assertThat(results.stream().filter(x -> Pumps.key(x).equals("bad")))
        .extracting(PumpTester.Result::kind)
        .containsExactly(Kind.ABANDONED, Kind.ABANDONED, Kind.ABANDONED);
    assertThat(b.operations().parkedKeys(b.group())).containsOnlyKeys("bad");
    assertThat(b.operations().parkedKeys(b.group()).get("bad"))
        .contains("reacquire_written_unique");
    assertThat(b.operations().partitionStats(b.group(), "bad").orElseThrow().failures())
        .isEqualTo(MAX_FAILURES);
    assertHandledOnce(calls, b);
  }

  /**
   * One tester, as one pump: the first failed commit is counted through reacquire; from then on the
   * pump checks each delivery's deferred constraints in its savepoint and fails "bad" alone; it
   * parks at maxFailures and every other key is handled exactly once.
   */
  @Test
  void onePumpParksTheKeyAndHandlesTheOthersOnce(TestDatabase db) {
    DataSource ds = db.dataSource();
    Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    BalancerDriver driver = driver(db, "reacquire-one", calls);
    MessageBalancer b = MessageBalancer.create(ds, "reacquire-one");
    PumpTester tester = tester(ds, driver);
    List<PumpTester.Result> first = tester.runOnce();
    assertThat(first).extracting(Pumps::key).containsExactly("bad");
    assertThat(first).extracting(PumpTester.Result::kind).containsExactly(Kind.ABANDONED);
    assertThat(b.operations().partitionStats(b.group(), "bad").orElseThrow().failures())
        .isEqualTo(1);

    List<PumpTester.Result> rest = tester.drainUntilIdle();
    assertThat(rest.stream().filter(x -> Pumps.key(x).equals("bad")))
        .extracting(PumpTester.Result::kind)
        .containsExactly(Kind.FAILED, Kind.PARKED);
    assertThat(rest.stream().filter(x -> !Pumps.key(x).equals("bad")))
        .extracting(PumpTester.Result::kind)
        .containsOnly(Kind.HANDLED)
        .hasSize(5);
    assertThat(b.operations().parkedKeys(b.group())).containsOnlyKeys("bad");
    assertThat(b.operations().partitionStats(b.group(), "bad").orElseThrow().failures())
        .isEqualTo(MAX_FAILURES);
    assertHandledOnce(calls, b);
  }

  private static void assertHandledOnce(Map<String, AtomicInteger> calls, MessageBalancer b) {
    for (int i = 0; i < 5; i++) {
      assertThat(calls.get("good-" + i)).as("good-" + i).hasValue(1);
    }
    assertThat(calls.get("bad")).hasValue(MAX_FAILURES);
    assertThat(b.operations().messageCount(b.group())).isEqualTo(1); // only bad's message is left
    assertThat(b.operations().partitionKeys(b.group())).containsExactly("bad");
  }

  /**
   * Reacquire finds the delivery only while its key is free and its message is still the head, with
   * the key's current failure count.
   */
  @Test
  void reacquireSkipsAKeyHeldElsewhereAndAMessageThatMovedOn(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "reacquire-spi");
    long first = b.storeMessage("k", bytes("1"));
    b.storeMessage("k", bytes("2"));
    for (boolean lock : new boolean[] {true, false}) {
      BalancerDriver driver =
          b.driver(
              BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build(),
              BalancerDriverOptions.defaults().withLockPartition(lock));
      Delivery stale;
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        stale = driver.acquire(Tx.of(c), 1).get(0);
        c.rollback();
      }
      assertThat(stale.messageId()).isEqualTo(Long.toString(first));
      try (Connection holder = ds.getConnection();
          Connection c = ds.getConnection()) {
        holder.setAutoCommit(false);
        c.setAutoCommit(false);
        // Another worker holds the key (lockPartition) or the message (without).
        assertThat(driver.acquire(Tx.of(holder), 1)).hasSize(1);
        assertThat(driver.reacquire(Tx.of(c), stale)).as("lockPartition %s", lock).isEmpty();
        holder.rollback();
        c.rollback();
        Optional<Delivery> again = driver.reacquire(Tx.of(c), stale);
        assertThat(again).as("lockPartition %s", lock).isPresent();
        assertThat(again.get().messageId()).isEqualTo(stale.messageId());
        assertThat(again.get().failures()).isZero();
        c.rollback();
      }
    }
    // The head was handled: the stale delivery has moved on.
    BalancerDriver driver =
        b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build());
    Delivery stale;
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      stale = driver.acquire(Tx.of(c), 1).get(0);
      c.rollback();
    }
    assertThat(Pumps.step(Pumps.tester(ds, driver))).isEqualTo(first);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertThat(driver.reacquire(Tx.of(c), stale)).isEmpty();
      c.rollback();
    }
  }
}
