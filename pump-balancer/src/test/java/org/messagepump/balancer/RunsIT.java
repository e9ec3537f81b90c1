package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
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
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Runs ({@code messagesPerTurn} above 1): a batch takes up to that many consecutive messages of
 * each key it walks to. Each test drives the pump's real runner ({@link PumpTester} or {@link
 * MessagePump}).
 */
@ExtendWith(PostgresExtension.class)
class RunsIT {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] seq(long i) {
    return ByteBuffer.allocate(8).putLong(i).array();
  }

  private static long seq(BalancedMessage m) {
    return ByteBuffer.wrap(m.content()).getLong();
  }

  /** Stores {@code perKey} messages for each of {@code keys}, numbered 0.. within each key. */
  private static void store(MessageBalancer b, List<String> keys, int perKey) {
    List<NewMessage> batch = new ArrayList<>();
    for (int i = 0; i < perKey; i++) {
      for (String k : keys) {
        batch.add(NewMessage.of(k, seq(i)));
      }
    }
    b.storeMessages(batch);
  }

  private static PumpTester tester(DataSource ds, BalancerDriver driver, int batchSize) {
    return PumpTester.builder(ds, driver)
        .batchSize(batchSize)
        .backoff(Pumps.TINY, Pumps.TINY)
        .build();
  }

  private static String key(PumpTester.Result r) {
    return Pumps.key(r);
  }

  @Test
  void aBatchTakesConsecutiveMessagesOfEachKeyInOrder(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "runs-shape");
    store(b, List.of("a", "b", "c"), 7);
    List<String> seen = new ArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      seen.add(m.partitionKey() + seq(m));
                      return Result.ok();
                    })
                .build(),
            BalancerDriverOptions.defaults().withMessagesPerTurn(3));
    assertThat(driver.messagesPerTurn()).isEqualTo(3);
    PumpTester t = tester(ds, driver, 5);
    // Walk order a, b, c; three of a key per turn, five per batch.
    assertThat(t.runOnce()).extracting(RunsIT::key).containsExactly("a", "a", "a", "b", "b");
    assertThat(seen).containsExactly("a0", "a1", "a2", "b0", "b1");
    // The next batch goes on from b in the walk (the cursor is the last key taken): c, then a.
    assertThat(t.runOnce()).extracting(RunsIT::key).containsExactly("c", "c", "c", "a", "a");
    t.drainUntilIdle();
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero(); // emptied keys are deleted
    Map<String, List<Long>> byKey = new HashMap<>();
    for (String s : seen) {
      byKey
          .computeIfAbsent(s.substring(0, 1), k -> new ArrayList<>())
          .add(Long.parseLong(s.substring(1)));
    }
    for (List<Long> order : byKey.values()) {
      assertThat(order).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L);
    }
  }

  @Test
  void aFailureInARunKeepsTheRestStoredAndInOrder(TestDatabase db) {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "runs-failure");
    store(b, List.of("k"), 6);
    AtomicBoolean failOnce = new AtomicBoolean(true);
    List<Long> handled = new CopyOnWriteArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      if (seq(m) == 2 && failOnce.getAndSet(false)) {
                        throw new IllegalStateException("downstream down");
                      }
                      handled.add(seq(m));
                      return Result.ok();
                    })
                .build(),
            BalancerDriverOptions.defaults().withMessagesPerTurn(5));
    PumpTester t = tester(ds, driver, 5);
    List<PumpTester.Result> first = t.runOnce();
    assertThat(first)
        .extracting(PumpTester.Result::kind)
        .containsExactly(Kind.HANDLED, Kind.HANDLED, Kind.FAILED, Kind.BUSY, Kind.BUSY);
    assertThat(handled).containsExactly(0L, 1L);
    // 2, 3, 4 are stored again, untouched (no attempt counted on the skipped ones), and 5 too.
    assertThat(b.operations().messageCount(b.group())).isEqualTo(4);
    assertThat(
            db.queryLong(
                "SELECT sum(attempts) FROM balancer.messages WHERE partition_group = 'runs-failure'"))
        .isZero();
    PartitionStats stats = b.operations().partitionStats(b.group(), "k").orElseThrow();
    assertThat(stats.failures()).isEqualTo(1);
    // A key with failures counted gets one message per turn: the failed one, alone.
    List<PumpTester.Result> retry = t.runOnce();
    assertThat(retry).extracting(PumpTester.Result::kind).containsExactly(Kind.HANDLED);
    assertThat(handled).containsExactly(0L, 1L, 2L);
    assertThat(b.operations().partitionStats(b.group(), "k").orElseThrow().failures()).isZero();
    // Then runs again.
    assertThat(t.runOnce())
        .extracting(PumpTester.Result::kind)
        .containsOnly(Kind.HANDLED)
        .hasSize(3);
    assertThat(handled).containsExactly(0L, 1L, 2L, 3L, 4L, 5L);
    assertThat(b.operations().messageCount(b.group())).isZero();
  }

  @Test
  void aRequeueOrHandoffInARunEndsTheTurnThere(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "runs-requeue");
    store(b, List.of("k"), 5);
    List<String> seen = new CopyOnWriteArrayList<>();
    AtomicInteger requeues = new AtomicInteger(1);
    AtomicInteger handoffs = new AtomicInteger(1);
    List<BalancedMessage> leases = new CopyOnWriteArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      seen.add(seq(m) + ":" + m.properties().getOrDefault("retry", 0));
                      if (seq(m) == 1 && requeues.getAndDecrement() > 0) {
                        return Result.requeue(Map.of("retry", 1));
                      }
                      if (seq(m) == 3 && handoffs.getAndDecrement() > 0) {
                        leases.add(m);
                        return Result.handoff();
                      }
                      return Result.ok();
                    })
                .build(),
            BalancerDriverOptions.defaults().withMessagesPerTurn(5));
    PumpTester t = tester(ds, driver, 5);
    assertThat(t.runOnce())
        .extracting(PumpTester.Result::kind)
        .containsExactly(Kind.HANDLED, Kind.HANDLED, Kind.BUSY, Kind.BUSY, Kind.BUSY);
    assertThat(seen).containsExactly("0:0", "1:0");
    assertThat(b.operations().messageCount(b.group())).isEqualTo(4);
    // The requeued message is first again, with its new properties; the hand-off of 3 blocks
    // the key and keeps 4 stored.
    assertThat(t.runOnce()).hasSize(4);
    assertThat(seen).containsExactly("0:0", "1:0", "1:1", "2:0", "3:0");
    assertThat(t.runOnce()).isEmpty(); // leased
    assertThat(b.operations().messageCount(b.group())).isEqualTo(2);
    assertThat(leases).hasSize(1);
    BalancedMessage leased = leases.get(0);
    assertThat(b.operations().partitionStats(b.group(), "k").orElseThrow().leasedMessageId())
        .isEqualTo(leased.id());
    assertThat(b.operations().confirm(leased.id(), leased.handoffToken()))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(t.runOnce()).extracting(PumpTester.Result::kind).containsExactly(Kind.HANDLED);
    assertThat(seen).containsExactly("0:0", "1:0", "1:1", "2:0", "3:0", "4:0");
    assertThat(b.operations().messageCount(b.group())).isZero();
  }

  @Test
  void manyWorkersDeliverEveryMessageOnceAndInOrderPerKey(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    db.execute("CREATE TABLE IF NOT EXISTS runs_ledger (k text, seq bigint, PRIMARY KEY (k, seq))");
    MessageBalancer b = MessageBalancer.create(ds, "runs-many");
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      keys.add("k" + i);
    }
    store(b, keys, 60);
    Map<String, Long> last = new ConcurrentHashMap<>();
    AtomicInteger violations = new AtomicInteger();
    AtomicInteger calls = new AtomicInteger();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      // Every 37th call fails once, every 53rd is Busy: runs stop in the middle.
                      int n = calls.incrementAndGet();
                      if (n % 37 == 0) {
                        throw new IllegalStateException("flaky " + n);
                      }
                      if (n % 53 == 0) {
                        throw new BusyException("later");
                      }
                      try (var ps =
                          ctx.tx()
                              .connection()
                              .prepareStatement("INSERT INTO runs_ledger VALUES (?, ?)")) {
                        ps.setString(1, m.partitionKey());
                        ps.setLong(2, seq(m));
                        ps.executeUpdate();
                      }
                      // Only committed work counts towards order: the handler runs in the
                      // transaction, so a later rollback would take the ledger row with it.
                      Long before = last.put(m.partitionKey(), seq(m));
                      if (before != null && before >= seq(m)) {
                        violations.incrementAndGet();
                      }
                      return Result.ok();
                    })
                .build(),
            BalancerDriverOptions.defaults().withMessagesPerTurn(4));
    try (MessagePump pump = Pumps.pump(ds, "runs-many", driver, 4, 10)) {
      pump.start();
      await().atMost(WAIT).until(() -> b.operations().messageCount(b.group()) == 0);
    }
    assertThat(db.queryLong("SELECT count(*) FROM runs_ledger")).isEqualTo(20 * 60);
    assertThat(violations).hasValue(0);
  }

  @Test
  void aColdKeyWaitsForOneTurnOfEachKeyAtMost(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "runs-fair");
    List<NewMessage> hot = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      hot.add(NewMessage.of("hot", seq(i)));
    }
    b.storeMessages(hot);
    List<String> cold = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      cold.add("cold" + i);
    }
    store(b, cold, 1);
    List<String> order = new ArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      order.add(m.partitionKey());
                      return Result.ok();
                    })
                .build(),
            BalancerDriverOptions.defaults().withMessagesPerTurn(5));
    PumpTester t = tester(ds, driver, 10);
    for (int i = 0; i < 10; i++) {
      t.runOnce();
    }
    // The hot key's turn is up to 5 messages; every cold key is served within one turn of every
    // key: 5 + 20 deliveries.
    for (String c : cold) {
      assertThat(order.indexOf(c)).isBetween(0, 5 + 20 - 1);
    }
  }

  @Test
  void badSettingsAreRefused(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "runs-bad");
    assertThatThrownBy(() -> BalancerDriverOptions.defaults().withMessagesPerTurn(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("messagesPerTurn");
    assertThatThrownBy(() -> BalancerDriverOptions.defaults().withMessagesPerTurn(1001))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("messagesPerTurn");
    assertThatThrownBy(
            () ->
                b.driver(
                    BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build(),
                    BalancerDriverOptions.defaults()
                        .withLockPartition(false)
                        .withMessagesPerTurn(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lockPartition");
  }
}
