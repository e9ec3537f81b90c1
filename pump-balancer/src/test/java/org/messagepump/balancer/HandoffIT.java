package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Hand-off with confirmation: races 3 and 5 of docs/balancer.md and the lease operations. */
@ExtendWith(PostgresExtension.class)
class HandoffIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** A delivery as downstream received it. */
  record Published(long id, UUID token, int attempts, String node) {}

  private static BalancedHandler publishTo(
      List<Published> downstream, String node, Duration lease) {
    return (m, ctx) -> {
      downstream.add(new Published(m.id(), m.handoffToken(), m.attempts(), node));
      return Result.handoff(lease);
    };
  }

  @Test
  void handoffBlocksTheKeyUntilConfirmAndKeepsOrder(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "blocks");
    long first = b.storeMessage("k", bytes("1"));
    long second = b.storeMessage("k", bytes("2"));
    long other = b.storeMessage("other", bytes("x"));
    List<Published> downstream = new CopyOnWriteArrayList<>();
    PumpTester driver =
        Pumps.tester(
            ds,
            b.driver(
                BalancedHandlers.builder()
                    .on(publishTo(downstream, "a", Duration.ofMinutes(5)))
                    .build()));
    assertThat(Pumps.step(driver)).isEqualTo(first);
    assertThat(Pumps.step(driver)).isEqualTo(other);
    assertThat(Pumps.step(driver)).isEqualTo(-1); // "k" is leased: second must wait
    PartitionStats k = b.operations().partitionStats(b.group(), "k").orElseThrow();
    assertThat(k.leasedMessageId()).isEqualTo(first);
    assertThat(k.inFlight()).isTrue();
    assertThat(k.leaseUntil()).isNotNull();
    assertThat(b.operations().stats(b.group()).leases()).isEqualTo(2);
    assertThat(b.operations().extendLease(first, downstream.get(0).token(), Duration.ofMinutes(10)))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(b.operations().confirm(first, UUID.randomUUID())).isEqualTo(LeaseResult.STALE_TOKEN);
    assertThat(b.operations().confirm(first, downstream.get(0).token()))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(b.operations().confirm(first, downstream.get(0).token()))
        .isEqualTo(LeaseResult.UNKNOWN_MESSAGE);
    assertThat(Pumps.step(driver)).isEqualTo(second);
    // Requeue through the lease: the message comes back with new properties.
    assertThat(b.operations().requeue(second, downstream.get(2).token(), "{\"retry\":1}"))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(Pumps.step(driver)).isEqualTo(second);
    assertThat(b.operations().confirm(other, downstream.get(1).token()))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(BalancerOperations.of(ds).confirm(second, downstream.get(3).token()))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }

  /**
   * The hand-off race: downstream confirms from inside the handler, before the hand-off's
   * transaction commits. The confirm waits for the commit and is applied; the key does not stall
   * for the lease, and nothing is handed off twice.
   */
  @Test
  void aConfirmArrivingBeforeTheHandoffCommitsWaitsForTheCommit(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "early-confirm");
    long first = b.storeMessage("k", bytes("1"));
    long second = b.storeMessage("k", bytes("2"));
    ExecutorService downstream = Executors.newSingleThreadExecutor();
    Map<Long, Future<LeaseResult>> confirms = new ConcurrentHashMap<>();
    List<Long> handedOff = new CopyOnWriteArrayList<>();
    String waiting =
        "SELECT count(*) FROM pg_stat_activity"
            + " WHERE datname = current_database() AND wait_event_type = 'Lock'";
    BalancedHandler handler =
        (m, ctx) -> {
          handedOff.add(m.id());
          // Downstream answers at once, on its own connection, while this handler still runs.
          Future<LeaseResult> confirm =
              downstream.submit(() -> b.operations().confirm(m.id(), m.handoffToken()));
          confirms.put(m.id(), confirm);
          // Return only once the confirm has arrived: it either waits on the key row or has
          // already answered (the defect: STALE_TOKEN at once).
          await().atMost(WAIT).until(() -> confirm.isDone() || db.queryLong(waiting) > 0);
          return Result.handoff(Duration.ofMinutes(5));
        };
    PumpTester tester = Pumps.tester(ds, b.driver(BalancedHandlers.builder().on(handler).build()));
    try {
      assertThat(Pumps.step(tester)).isEqualTo(first);
      assertThat(confirms.get(first).get(60, TimeUnit.SECONDS)).isEqualTo(LeaseResult.APPLIED);
      // The key is free at once (not after the 5-minute lease): the next message follows.
      assertThat(Pumps.step(tester)).isEqualTo(second);
      assertThat(confirms.get(second).get(60, TimeUnit.SECONDS)).isEqualTo(LeaseResult.APPLIED);
      assertThat(Pumps.step(tester)).isEqualTo(-1);
    } finally {
      downstream.shutdownNow();
    }
    assertThat(handedOff).containsExactly(first, second);
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }

  /** Race 3: a late confirm/extend/requeue after the lease expired and was taken again. */
  @Test
  void lateOperationsWithAStaleTokenAreRejected(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "late");
    long id = b.storeMessage("k", bytes("x"));
    List<Published> downstream = new CopyOnWriteArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(publishTo(downstream, "a", Duration.ofMillis(200)))
                .build(),
            BalancerDriverOptions.defaults().withReapInterval(Duration.ofMillis(10)));
    try (MessagePump pump = Pumps.pump(ds, "late", driver, 2)) {
      pump.start();
      await().atMost(WAIT).until(() -> downstream.size() >= 2);
      pump.close();
      Published stale = downstream.get(0);
      Published current = downstream.get(downstream.size() - 1);
      assertThat(current.attempts()).isEqualTo(downstream.size() - 1);
      assertThat(stale.token()).isNotEqualTo(current.token());
      // Extend the current lease so that it cannot expire while we check.
      assertThat(b.operations().extendLease(id, current.token(), Duration.ofMinutes(5)))
          .isEqualTo(LeaseResult.APPLIED);
      assertThat(b.operations().confirm(id, stale.token())).isEqualTo(LeaseResult.STALE_TOKEN);
      assertThat(b.operations().extendLease(id, stale.token(), Duration.ofMinutes(1)))
          .isEqualTo(LeaseResult.STALE_TOKEN);
      assertThat(b.operations().requeue(id, stale.token())).isEqualTo(LeaseResult.STALE_TOKEN);
      assertThat(b.operations().messageCount(b.group())).isEqualTo(1);
      assertThat(b.operations().confirm(id, current.token())).isEqualTo(LeaseResult.APPLIED);
    }
    assertThat(b.operations().messageCount(b.group())).isZero();
  }

  /**
   * Race 5a: a process dies after the lease committed (before or after publishing downstream):
   * another process does not hand the message off again before the lease expires, then does with
   * attempts + 1.
   */
  @Test
  void aProcessThatDiesAfterHandoffCausesNoSecondHandoffBeforeExpiry(TestDatabase db)
      throws Exception {
    List<Published> downstream = new CopyOnWriteArrayList<>();
    DataSource a = db.newDataSource("died-a", 4);
    MessageBalancer ba = MessageBalancer.create(a, "died");
    long id = ba.storeMessage("k", bytes("x"));
    Duration lease = Duration.ofSeconds(3);
    MessagePump pumpA =
        Pumps.pump(
            a,
            "died-a",
            ba.driver(BalancedHandlers.builder().on(publishTo(downstream, "a", lease)).build()),
            2);
    pumpA.start();
    await().atMost(WAIT).until(() -> downstream.size() == 1);
    await()
        .atMost(WAIT)
        .until(
            () ->
                ba.operations().partitionStats(ba.group(), "k").orElseThrow().leasedMessageId()
                    != null);
    // "Crash": the process and its connections are gone; nothing was confirmed.
    pumpA.close();
    db.terminateBackends("died-a");

    DataSource bPool = db.newDataSource("died-b", 4);
    MessageBalancer bb = MessageBalancer.create(bPool, "died");
    try (MessagePump pumpB =
        Pumps.pump(
            bPool,
            "died-b",
            bb.driver(
                BalancedHandlers.builder().on(publishTo(downstream, "b", lease)).build(),
                BalancerDriverOptions.defaults().withReapInterval(Duration.ofMillis(20))),
            2)) {
      pumpB.start();
      long leaseUntil =
          bb.operations().partitionStats(bb.group(), "k").orElseThrow().leaseUntil().toEpochMilli();
      // While the lease holds, the message is not handed off again.
      await()
          .during(Duration.ofMillis(1500))
          .atMost(WAIT)
          .until(() -> downstream.size() == 1 || System.currentTimeMillis() > leaseUntil);
      await().atMost(WAIT).until(() -> downstream.size() == 2);
      Published again = downstream.get(1);
      assertThat(again.node()).isEqualTo("b");
      assertThat(again.id()).isEqualTo(id);
      assertThat(again.attempts()).isEqualTo(1);
      assertThat(db.queryLong("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"))
          .isGreaterThanOrEqualTo(leaseUntil);
      assertThat(bb.operations().confirm(id, again.token())).isEqualTo(LeaseResult.APPLIED);
    }
    assertThat(bb.operations().messageCount(bb.group())).isZero();
  }

  /**
   * Race 5b: a process dies between publishing and the downstream confirm: the confirm, arriving at
   * another process, completes the message, and nothing is handed off again.
   */
  @Test
  void aConfirmFromAnyProcessCompletesTheMessage(TestDatabase db) throws Exception {
    List<Published> downstream = new CopyOnWriteArrayList<>();
    DataSource a = db.newDataSource("confirm-a", 4);
    MessageBalancer ba = MessageBalancer.create(a, "confirm");
    long id = ba.storeMessage("k", bytes("x"));
    long next = ba.storeMessage("k", bytes("y"));
    Duration lease = Duration.ofSeconds(2);
    MessagePump pumpA =
        Pumps.pump(
            a,
            "confirm-a",
            ba.driver(BalancedHandlers.builder().on(publishTo(downstream, "a", lease)).build()),
            2);
    pumpA.start();
    await().atMost(WAIT).until(() -> downstream.size() == 1);
    pumpA.close();
    db.terminateBackends("confirm-a");

    DataSource bPool = db.newDataSource("confirm-b", 4);
    MessageBalancer bb = MessageBalancer.create(bPool, "confirm");
    await()
        .atMost(WAIT)
        .until(
            () ->
                bb.operations().partitionStats(bb.group(), "k").orElseThrow().leasedMessageId()
                    != null);
    // Downstream confirms through another process.
    assertThat(bb.operations().confirm(id, downstream.get(0).token()))
        .isEqualTo(LeaseResult.APPLIED);
    try (MessagePump pumpB =
        Pumps.pump(
            bPool,
            "confirm-b",
            bb.driver(
                BalancedHandlers.builder()
                    .on(publishTo(downstream, "b", Duration.ofMinutes(5)))
                    .build(),
                BalancerDriverOptions.defaults().withReapInterval(Duration.ofMillis(20))),
            2)) {
      pumpB.start();
      await().atMost(WAIT).until(() -> downstream.size() == 2);
      // Past the first lease's expiry nothing more is handed off: only the next message was.
      await().during(Duration.ofMillis(2500)).atMost(WAIT).until(() -> downstream.size() == 2);
    }
    assertThat(downstream.get(1).id()).isEqualTo(next);
    assertThat(downstream.stream().filter(p -> p.id() == id)).hasSize(1);
  }

  /**
   * Race 5c: a process dies before its lease commits (after publishing): the transaction is gone,
   * so the message is delivered again at once with the same id (downstream deduplicates on it).
   */
  @Test
  void aProcessThatDiesBeforeTheLeaseCommitsRedeliversAtOnce(TestDatabase db) throws Exception {
    List<Published> downstream = new CopyOnWriteArrayList<>();
    CountDownLatch published = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    DataSource a = db.newDataSource("early-a", 4);
    MessageBalancer ba = MessageBalancer.create(a, "early");
    long id = ba.storeMessage("k", bytes("x"));
    MessagePump pumpA =
        Pumps.pump(
            a,
            "early-a",
            ba.driver(
                BalancedHandlers.builder()
                    .on(
                        (m, ctx) -> {
                          downstream.add(
                              new Published(m.id(), m.handoffToken(), m.attempts(), "a"));
                          published.countDown();
                          never.await(60, TimeUnit.SECONDS); // dies here, before the commit
                          return Result.handoff();
                        })
                    .build()),
            1);
    pumpA.start();
    assertThat(published.await(60, TimeUnit.SECONDS)).isTrue();
    assertThat(db.terminateBackends("early-a")).isPositive();
    DataSource bPool = db.newDataSource("early-b", 4);
    MessageBalancer bb = MessageBalancer.create(bPool, "early");
    try (MessagePump pumpB =
        Pumps.pump(
            bPool,
            "early-b",
            bb.driver(
                BalancedHandlers.builder()
                    .on(publishTo(downstream, "b", Duration.ofMinutes(5)))
                    .build()),
            1)) {
      pumpB.start();
      await().atMost(WAIT).until(() -> downstream.size() == 2);
    }
    never.countDown();
    pumpA.close();
    assertThat(downstream.get(1).id()).isEqualTo(id);
    assertThat(downstream.get(1).attempts()).isZero();
    assertThat(bb.operations().confirm(id, downstream.get(1).token()))
        .isEqualTo(LeaseResult.APPLIED);
  }

  @Test
  void leasesExpiringTooOftenParkTheKey(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "expiring");
    b.storeMessage("k", bytes("x"));
    List<Published> downstream = new CopyOnWriteArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(publishTo(downstream, "a", Duration.ofMillis(50)))
                .build(),
            BalancerDriverOptions.defaults()
                .withReapInterval(Duration.ofMillis(10))
                .withMaxAttempts(2));
    try (MessagePump pump = Pumps.pump(ds, "expiring", driver, 1)) {
      pump.start();
      await().atMost(WAIT).until(() -> b.operations().parkedKeys(b.group()).containsKey("k"));
    }
    assertThat(b.operations().parkedKeys(b.group()).get("k")).contains("expired 2 times");
    assertThat(downstream).hasSize(2);
  }

  @Test
  void handoffWithoutLockPartitionIsAFailedDelivery(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "unlocked-handoff");
    b.storeMessage("k", bytes("x"));
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder().on((m, ctx) -> Result.handoff()).build(),
            BalancerDriverOptions.defaults().withLockPartition(false));
    List<PumpTester.Result> r = Pumps.tester(ds, driver).runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.FAILED);
    assertThat(r.get(0).cause()).hasMessageContaining("lockPartition");
    PartitionStats k = b.operations().partitionStats(b.group(), "k").orElseThrow();
    assertThat(k.leasedMessageId()).isNull();
    assertThat(k.failures()).isEqualTo(1);
  }
}
