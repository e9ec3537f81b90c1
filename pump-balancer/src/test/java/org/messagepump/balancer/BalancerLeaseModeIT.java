package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Delivery;
import org.messagepump.testkit.FreezableDataSource;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.VacuumHorizon;

/**
 * Lease mode of the balancer through the real pump: no transaction held while a handler runs, order
 * per key kept across leases, an abandoned claim freed by the reaper and served again, a holder
 * that lost its lease refused, failures counted and parked.
 */
@ExtendWith(PostgresExtension.class)
class BalancerLeaseModeIT {

  private static final Duration LEASE = Duration.ofSeconds(1);

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(BalancedMessage m) {
    return new String(m.content(), StandardCharsets.UTF_8);
  }

  private static MessagePump.Builder pump(DataSource ds, BalancerDriver driver) {
    return MessagePump.builder(ds)
        .name("leased")
        .driver(driver)
        .workers(4)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
        .maxFailures(3);
  }

  @Test
  void keysAreServedInOrderWithNoTransactionHeldWhileHandlersRun(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "lease-order");
    for (int i = 0; i < 10; i++) {
      for (String key : List.of("a", "b", "c")) {
        b.storeMessage(key, bytes(key + i));
      }
    }
    Map<String, List<String>> seen = new ConcurrentHashMap<>();
    AtomicInteger inKey = new AtomicInteger();
    Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
    AtomicBoolean overlap = new AtomicBoolean();
    AtomicInteger openDuringHandlers = new AtomicInteger();
    BalancedHandler handler =
        (m, ctx) -> {
          AtomicInteger r = running.computeIfAbsent(m.partitionKey(), k -> new AtomicInteger());
          if (r.incrementAndGet() > 1) {
            overlap.set(true);
          }
          try {
            Thread.sleep(40);
            openDuringHandlers.accumulateAndGet((int) openTransactions(ds), Math::max);
            seen.computeIfAbsent(
                    m.partitionKey(), k -> Collections.synchronizedList(new ArrayList<>()))
                .add(text(m));
          } finally {
            r.decrementAndGet();
          }
          inKey.incrementAndGet();
          return Result.ok();
        };
    try (MessagePump p =
        pump(
                ds,
                b.driver(
                    BalancedHandlers.builder().on(handler).build(),
                    BalancerDriverOptions.defaults().withLeaseMode(LEASE)))
            .build()) {
      p.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> b.operations().messageCount(b.group()) == 0);
    }
    assertThat(overlap).isFalse();
    assertThat(inKey).hasValue(30);
    for (String key : List.of("a", "b", "c")) {
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        expected.add(key + i);
      }
      assertThat(seen.get(key)).containsExactlyElementsOf(expected);
    }
    assertThat(openDuringHandlers.get()).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }

  /**
   * Transactions open for more than a second now, other than the asking one: the pump's own
   * (claims, heartbeats, outcomes, polls) last milliseconds; a handler's transaction in the
   * transactional mode lasts as long as the handler.
   */
  private static long openTransactions(DataSource ds) {
    try {
      return VacuumHorizon.openTransactionsOlderThan(ds, Duration.ofSeconds(1));
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aLongHandlerKeepsItsLeaseByHeartbeats(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "lease-long");
    b.storeMessage("k", bytes("long"));
    b.storeMessage("k", bytes("next"));
    List<String> seen = new CopyOnWriteArrayList<>();
    BalancedHandler handler =
        (m, ctx) -> {
          if (text(m).equals("long")) {
            Thread.sleep(5 * LEASE.toMillis() / 2); // two and a half lease lengths
          }
          seen.add(text(m) + "#" + m.attempts());
          return Result.ok();
        };
    try (MessagePump p =
        pump(
                ds,
                b.driver(
                    BalancedHandlers.builder().on(handler).build(),
                    BalancerDriverOptions.defaults().withLeaseMode(LEASE)))
            .build()) {
      p.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> b.operations().messageCount(b.group()) == 0);
    }
    // Never reaped: each message ran once, in order, with no expired attempt.
    assertThat(seen).containsExactly("long#0", "next#0");
  }

  @Test
  void anAbandonedClaimIsFreedByTheReaperAndServedAgain(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "lease-orphan");
    long id = b.storeMessage("k", bytes("orphan"));
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    BalancedDriverPair pair =
        driverPair(
            b,
            (m, ctx) -> {
              attempts.add(m.attempts());
              return Result.ok();
            });
    // A process claims it, commits, and dies.
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      List<Delivery> claimed = pair.driver.acquire(Tx.of(c), 1);
      c.commit();
      assertThat(claimed).hasSize(1);
    }
    try (MessagePump p = pump(ds, pair.driver).build()) {
      p.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> b.operations().messageCount(b.group()) == 0);
    }
    assertThat(attempts).containsExactly(1); // one expired attempt counted
    assertThat(id).isPositive();
  }

  private record BalancedDriverPair(BalancerDriver driver) {}

  private static BalancedDriverPair driverPair(MessageBalancer b, BalancedHandler h) {
    return new BalancedDriverPair(
        b.driver(
            BalancedHandlers.builder().on(h).build(),
            BalancerDriverOptions.defaults()
                .withLeaseMode(LEASE)
                .withReapInterval(Duration.ofMillis(100))));
  }

  @Test
  void aHolderThatLostItsLeaseIsRefusedAndTheMessageIsHandledOnce(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "lease-lost");
    b.storeMessage("k", bytes("contested"));
    CountDownLatch aRunning = new CountDownLatch(1);
    CountDownLatch thaw = new CountDownLatch(1);
    AtomicInteger bRuns = new AtomicInteger();
    // A's heartbeats cannot reach the database while it is "frozen": its lease runs out.
    FreezableDataSource frozen = new FreezableDataSource(ds);
    BalancedHandler handlerA =
        (m, ctx) -> {
          aRunning.countDown();
          frozen.freeze();
          assertThat(thaw.await(60, TimeUnit.SECONDS)).isTrue();
          frozen.thaw();
          return Result.ok();
        };
    SimpleMeterRegistry metersA = new SimpleMeterRegistry();
    try (MessagePump a =
        pump(
                frozen,
                b.driver(
                    BalancedHandlers.builder().on(handlerA).build(),
                    BalancerDriverOptions.defaults().withLeaseMode(LEASE)))
            .name("a")
            .meterRegistry(metersA)
            .build()) {
      a.start();
      assertThat(aRunning.await(30, TimeUnit.SECONDS)).isTrue();
      BalancerDriver driverB =
          b.driver(
              BalancedHandlers.builder()
                  .on(
                      (m, ctx) -> {
                        bRuns.incrementAndGet();
                        return Result.ok();
                      })
                  .build(),
              BalancerDriverOptions.defaults()
                  .withLeaseMode(LEASE)
                  .withReapInterval(Duration.ofMillis(100)));
      try (MessagePump p = pump(ds, driverB).name("b").build()) {
        p.start();
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> b.operations().messageCount(b.group()) == 0);
      }
      thaw.countDown();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  metersA
                          .counter("messagepump.leases.lost", "pump", "a", "driver", "balancer")
                          .count()
                      == 1);
    }
    assertThat(bRuns).hasValue(1);
    assertThat(b.operations().messageCount(b.group())).isZero();
  }

  @Test
  void failuresAndBusyAreCountedAndTheKeyParksAtMaxFailures(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "lease-fail");
    b.storeMessage("bad", bytes("x"));
    b.storeMessage("busy", bytes("y"));
    AtomicInteger badRuns = new AtomicInteger();
    AtomicInteger busyRuns = new AtomicInteger();
    BalancedHandler handler =
        (m, ctx) -> {
          if (m.partitionKey().equals("bad")) {
            badRuns.incrementAndGet();
            throw new IllegalStateException("always fails");
          }
          if (busyRuns.incrementAndGet() < 3) {
            throw new BusyException("downstream busy", Duration.ofMillis(100));
          }
          return Result.ok();
        };
    try (MessagePump p =
        pump(
                ds,
                b.driver(
                    BalancedHandlers.builder().on(handler).build(),
                    BalancerDriverOptions.defaults().withLeaseMode(LEASE)))
            .build()) {
      p.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> b.operations().parkedKeys(b.group(), null, 10).size() == 1);
      await().atMost(Duration.ofSeconds(30)).until(() -> busyRuns.get() == 3);
    }
    assertThat(badRuns).hasValue(3);
    assertThat(b.operations().parkedKeys(b.group(), null, 10).get(0).reason())
        .contains("always fails");
  }

  @Test
  void leaseModeRefusesWhatItCannotKeep(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "lease-bad");
    BalancedHandler h = (m, ctx) -> Result.ok();
    assertThatThrownBy(() -> BalancerDriverOptions.defaults().withLeaseMode(Duration.ofMillis(10)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () ->
                b.driver(
                    BalancedHandlers.builder().on(h).build(),
                    BalancerDriverOptions.defaults().withLeaseMode(LEASE).withLockPartition(false)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lockPartition");
    assertThatThrownBy(
            () ->
                b.driver(
                    BalancedHandlers.builder().on(h).build(),
                    BalancerDriverOptions.defaults().withLeaseMode(LEASE).withMessagesPerTurn(5)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
