package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.ChargeCard;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Delivery;
import org.messagepump.testkit.FreezableDataSource;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.VacuumHorizon;

/**
 * Lease mode through the real pump: no transaction is held while a handler runs, a lease outlives
 * its length by heartbeats, an abandoned claim comes back counted, a claim that always dies parks
 * without running again, and a holder that lost its lease cannot complete.
 */
@ExtendWith(PostgresExtension.class)
class LeaseModeIT {

  private static final Duration LEASE = Duration.ofSeconds(1);

  @RegisterExtension
  static final CommandQueueFixture COMMANDS =
      CommandQueueFixture.of(Fixtures.CODEC)
          .table("lease_effects", "CREATE TABLE lease_effects (order_id text, token bigint)");

  private final CommandQueue queue = COMMANDS.queue();

  private static MessagePump.Builder pump(DataSource ds, CommandDriver driver) {
    return MessagePump.builder(ds)
        .name("leases")
        .driver(driver)
        .workers(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
        .maxFailures(3);
  }

  @Test
  void aLongHandlerHoldsNoTransactionAndVacuumCleansBehindIt(DataSource ds) throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    AtomicInteger handled = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  running.countDown();
                  assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                  handled.incrementAndGet();
                })
            .build();
    UUID id = queue.enqueue(new PlaceOrder("long")).messageId();
    try (MessagePump p =
        pump(ds, queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE)))
            .build()) {
      p.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      // Three lease lengths: only the heartbeats keep the claim.
      Thread.sleep(3 * LEASE.toMillis());
      assertThat(openTransactionsBesidesThisOne(ds)).isZero();
      assertThat(vacuumEmptiesAChurnedTable(ds)).isZero();
      assertThat(
              count(ds, "SELECT count(*) FROM commandqueue.commands WHERE leased_by IS NOT NULL"))
          .isEqualTo(1);
      finish.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
    }
    assertThat(handled).hasValue(1);
    assertThat(count(ds, "SELECT count(*) FROM commandqueue.dead_letters")).isZero();
    assertThat(id).isNotNull();
  }

  @Test
  void theSameMeasureSeesTheTransactionOfTheTransactionalMode(DataSource ds) throws Exception {
    // The control of the test above: a handler of the transactional mode holds its transaction,
    // and vacuum cannot empty the table churned behind it.
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  running.countDown();
                  assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                })
            .build();
    queue.enqueue(new PlaceOrder("held"));
    try (MessagePump p = pump(ds, queue.driver(handlers)).build()) {
      p.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      Thread.sleep(2_500);
      assertThat(openTransactionsBesidesThisOne(ds)).isEqualTo(1);
      assertThat(vacuumEmptiesAChurnedTable(ds)).isPositive();
      finish.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
    }
  }

  /**
   * Transactions open on the server for more than two seconds now, other than the one asking: the
   * pump's own (polls, claims, heartbeats, outcomes) last milliseconds, while a handler's
   * transaction in the transactional mode lasts as long as the handler.
   */
  private static long openTransactionsBesidesThisOne(DataSource ds) throws SQLException {
    return VacuumHorizon.openTransactionsOlderThan(ds, Duration.ofSeconds(2));
  }

  private static long vacuumEmptiesAChurnedTable(DataSource ds) throws SQLException {
    return VacuumHorizon.pagesLeftAfterChurnAndVacuum(ds, "lease_churn");
  }

  @Test
  void aClaimWhoseProcessDiedComesBackAfterItsLeaseCountedAsAFailure(DataSource ds)
      throws Exception {
    UUID id = queue.enqueue(new PlaceOrder("orphan")).messageId();
    AtomicInteger attempts = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> attempts.set(ctx.attempt()))
            .build();
    CommandDriver driver = queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE));
    List<Delivery> orphaned = claimAndDie(ds, driver);
    assertThat(orphaned).hasSize(1);
    long claimedAt = System.nanoTime();
    try (MessagePump p = pump(ds, driver).build()) {
      p.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
    }
    assertThat(System.nanoTime() - claimedAt).isGreaterThanOrEqualTo(LEASE.toNanos());
    assertThat(attempts).hasValue(2); // the orphaned claim was attempt 1, counted as failed
    assertThat(count(ds, "SELECT count(*) FROM commandqueue.dead_letters")).isZero();
    assertThat(id).isNotNull();
  }

  @Test
  void aCommandWhoseClaimAlwaysDiesParksWithoutRunningAgain(DataSource ds) throws Exception {
    UUID id = queue.enqueue(new PlaceOrder("crasher")).messageId();
    AtomicInteger runs = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder().on(PlaceOrder.class, (c, ctx) -> runs.incrementAndGet()).build();
    CommandDriver driver = queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE));
    for (int i = 0; i < 3; i++) { // maxFailures claims, each dying with its process
      await().atMost(Duration.ofSeconds(10)).until(() -> claimAndDie(ds, driver).size() == 1);
    }
    try (MessagePump p = pump(ds, driver).build()) {
      p.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> queue.operations().deadLetters().count() == 1);
    }
    assertThat(runs).hasValue(0);
    assertThat(Fixtures.pending(ds)).isZero();
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.dead_letters WHERE message_id = ?::uuid"
                    + " AND failures = 3 AND last_error LIKE '%lease%expired%'",
                id.toString()))
        .isEqualTo(1);
  }

  /** Claims as a pump would, commits, and never extends nor completes: a process that died. */
  private static List<Delivery> claimAndDie(DataSource ds, CommandDriver driver)
      throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      List<Delivery> claimed = driver.acquire(Tx.of(c), 1);
      c.commit();
      return claimed;
    }
  }

  @Test
  void aHolderThatLostItsLeaseCannotCompleteAndTheOtherCompletesOnce(DataSource ds)
      throws Exception {
    // Process A freezes: its database calls stop (heartbeats fail) while its handler runs on.
    // Process B takes the command once A's lease has expired and completes it. A then thaws,
    // its handler returns, and its completion is refused and counted.
    FreezableDataSource frozenA = new FreezableDataSource(ds);
    CountDownLatch aRunning = new CountDownLatch(1);
    CountDownLatch thaw = new CountDownLatch(1);
    Set<Long> effectTokens = ConcurrentHashMap.newKeySet();
    AtomicInteger bRuns = new AtomicInteger();
    CommandHandlers handlersA =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  aRunning.countDown();
                  frozenA.freeze();
                  assertThat(thaw.await(60, TimeUnit.SECONDS)).isTrue();
                  frozenA.thaw();
                  effectTokens.add(ctx.fencingToken().orElseThrow());
                })
            .build();
    CommandHandlers handlersB =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  bRuns.incrementAndGet();
                  effectTokens.add(ctx.fencingToken().orElseThrow());
                })
            .build();
    queue.enqueue(new PlaceOrder("contested"));
    SimpleMeterRegistry metersA = new SimpleMeterRegistry();
    try (MessagePump a =
        pump(frozenA, queue.driver(handlersA, CommandDriverOptions.defaults().withLease(LEASE)))
            .name("a")
            .meterRegistry(metersA)
            .build()) {
      a.start();
      assertThat(aRunning.await(30, TimeUnit.SECONDS)).isTrue();
      try (MessagePump b =
          pump(ds, queue.driver(handlersB, CommandDriverOptions.defaults().withLease(LEASE)))
              .name("b")
              .build()) {
        b.start();
        await().atMost(Duration.ofSeconds(30)).until(() -> bRuns.get() == 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> Fixtures.pending(ds) == 0);
      }
      thaw.countDown();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  metersA
                          .counter("messagepump.leases.lost", "pump", "a", "driver", "commands")
                          .count()
                      == 1);
    }
    assertThat(bRuns).hasValue(1);
    assertThat(effectTokens).hasSize(2); // two claims, two different tokens
    assertThat(Fixtures.pending(ds)).isZero();
    assertThat(count(ds, "SELECT count(*) FROM commandqueue.dead_letters")).isZero();
  }

  @Test
  void failuresBusyAndTimeoutsAreRecordedAsInTheTransactionalMode(DataSource ds) {
    AtomicInteger shipRuns = new AtomicInteger();
    AtomicInteger chargeRuns = new AtomicInteger();
    AtomicInteger placeRuns = new AtomicInteger();
    AtomicBoolean overlap = new AtomicBoolean();
    AtomicInteger inPlace = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                ShipOrder.class,
                (c, ctx) -> {
                  shipRuns.incrementAndGet();
                  throw new IllegalStateException("always fails");
                })
            .on(
                ChargeCard.class,
                (c, ctx) -> {
                  if (chargeRuns.incrementAndGet() < 3) {
                    throw new BusyException("gateway busy", Duration.ofMillis(100));
                  }
                })
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  if (inPlace.incrementAndGet() > 1) {
                    overlap.set(true);
                  }
                  placeRuns.incrementAndGet();
                  try {
                    // Ignores the timeout's interrupt for a while: its lease is kept meanwhile,
                    // so no second run starts before it returns.
                    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1_500);
                    while (System.nanoTime() < until) {
                      try {
                        Thread.sleep(50);
                      } catch (InterruptedException ignored) {
                        // swallowed on purpose
                      }
                    }
                  } finally {
                    inPlace.decrementAndGet();
                  }
                })
            .build();
    queue.enqueue(new ShipOrder("s"));
    queue.enqueue(new ChargeCard("c", 1));
    queue.enqueue(new PlaceOrder("p"));
    try (MessagePump p =
        pump(ds, queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE)))
            .workers(3)
            .handlerTimeout(Duration.ofMillis(500))
            .build()) {
      p.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 2);
      await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
    }
    assertThat(shipRuns).hasValue(3); // maxFailures runs, then parked
    assertThat(chargeRuns).hasValue(3); // Busy twice, uncounted, then handled
    assertThat(placeRuns).hasValue(3); // three timeouts, never two runs at once
    assertThat(overlap).isFalse();
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.dead_letters WHERE failures = 3"
                    + " AND (last_error LIKE '%always fails%' OR last_error LIKE '%timeout%')"))
        .isEqualTo(2);
  }

  @Test
  void theHandlerHasNoPumpTransactionButAFencingToken(DataSource ds) {
    AtomicInteger tokens = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  assertThatThrownBy(ctx::tx)
                      .isInstanceOf(IllegalStateException.class)
                      .hasMessageContaining("lease mode");
                  assertThatThrownBy(() -> ctx.enqueue(new ShipOrder("x")))
                      .isInstanceOf(IllegalStateException.class);
                  if (ctx.fencingToken().isPresent()) {
                    tokens.incrementAndGet();
                  }
                })
            .build();
    queue.enqueue(new PlaceOrder("p"));
    try (MessagePump p =
        pump(ds, queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE)))
            .build()) {
      p.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
    }
    assertThat(tokens).hasValue(1);
    assertThat(count(ds, "SELECT count(*) FROM commandqueue.dead_letters")).isZero();
  }

  @Test
  void aPausedTypeIsNotClaimed(DataSource ds) throws Exception {
    AtomicInteger runs = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder().on(PlaceOrder.class, (c, ctx) -> runs.incrementAndGet()).build();
    queue.operations().pauseType("orders.PlaceOrder", "maintenance");
    try {
      queue.enqueue(new PlaceOrder("p"));
      try (MessagePump p =
          pump(ds, queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE)))
              .build()) {
        p.start();
        Thread.sleep(500);
        assertThat(runs).hasValue(0);
        queue.operations().resumeType("orders.PlaceOrder");
        await().atMost(Duration.ofSeconds(30)).until(() -> runs.get() == 1);
      }
    } finally {
      queue.operations().resumeType("orders.PlaceOrder");
    }
  }

  @Test
  void aBadLeaseIsRefused() {
    CommandHandlers handlers =
        CommandHandlers.builder().on(PlaceOrder.class, (c, ctx) -> {}).build();
    assertThatThrownBy(
            () -> queue.driver(handlers, CommandDriverOptions.defaults().withLease(null)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () ->
                queue.driver(
                    handlers, CommandDriverOptions.defaults().withLease(Duration.ofMillis(999))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least");
    assertThatThrownBy(
            () ->
                queue.driver(
                    handlers, CommandDriverOptions.defaults().withLease(Duration.ofHours(2))))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
