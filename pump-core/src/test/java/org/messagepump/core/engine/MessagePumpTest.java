package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.messagepump.core.Backoff;
import org.messagepump.core.BusyException;
import org.messagepump.core.spi.Outcome;

class MessagePumpTest {

  private final FakeDatabase db = new FakeDatabase();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private MessagePump pump;

  @AfterEach
  void closePump() {
    if (pump != null) {
      pump.close();
    }
  }

  private MessagePump.Builder builder(InMemoryDriver driver) {
    return MessagePump.builder(db.dataSource())
        .name("test")
        .driver(driver)
        .pollInterval(Duration.ofMillis(20))
        .backoff(Duration.ofMillis(10), Duration.ofMillis(200))
        .shutdownGrace(Duration.ofSeconds(5))
        .meterRegistry(registry);
  }

  private double deliveries(String outcome) {
    // Summed over message types (each type's meters appear at its first delivery).
    return registry.find("messagepump.deliveries").tag("outcome", outcome).counters().stream()
        .mapToDouble(io.micrometer.core.instrument.Counter::count)
        .sum();
  }

  @Test
  void handledDeliveriesAreCommittedOnceEach() {
    InMemoryDriver driver = new InMemoryDriver();
    IntStream.range(0, 500).forEach(i -> driver.add("m" + i));
    pump = builder(driver).workers(4).build();
    pump.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> driver.handled.size() == 500);
    assertThat(driver.handled).doesNotHaveDuplicates();
    assertThat(driver.items).isEmpty();
    assertThat(deliveries("handled")).isEqualTo(500);
  }

  @Test
  void outcomesMapToPostponementAndFailureCounts() {
    InMemoryDriver driver =
        new InMemoryDriver()
            .add("busy", "failed", "thrown", "busy-exception", "serialization")
            .handler(
                (tx, d) -> {
                  InMemoryDriver.fake(tx).write(() -> {}); // a partial write, rolled back
                  switch (d.messageId()) {
                    case "busy":
                      return Outcome.busy("locked");
                    case "failed":
                      return Outcome.failed(new IllegalStateException("no"));
                    case "thrown":
                      throw new IllegalArgumentException("bad");
                    case "busy-exception":
                      throw new BusyException("try later");
                    default:
                      throw new SQLException("could not serialize access", "40001");
                  }
                });
    pump = builder(driver).workers(2).build();
    pump.start();
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> driver.postponements.stream().map(p -> p.id()).distinct().count() == 5);
    pump.close();
    for (InMemoryDriver.Postponement p : driver.postponements) {
      switch (p.id()) {
        case "busy":
        case "busy-exception":
        case "serialization":
          assertThat(p.failures()).as(p.id()).isZero();
          assertThat(p.delay()).as(p.id()).isEqualTo(Duration.ofMillis(10));
          break;
        default:
          assertThat(p.failures()).as(p.id()).isPositive();
          assertThat(p.delay())
              .as(p.id())
              .isBetween(
                  Duration.ofMillis(10),
                  new Backoff(Duration.ofMillis(10), Duration.ofMillis(200)).ceiling(p.failures()));
      }
    }
    assertThat(driver.handled).isEmpty();
    assertThat(deliveries("busy")).isPositive();
    assertThat(deliveries("failed")).isPositive();
  }

  @Test
  void failuresAreCountedUpToMaxFailuresThenParked() {
    InMemoryDriver driver =
        new InMemoryDriver()
            .add("doomed", "fine")
            .handler(
                (tx, d) -> {
                  if (d.messageId().equals("doomed")) {
                    throw new IllegalStateException("attempt " + d.attempt());
                  }
                  return Outcome.HANDLED;
                });
    pump = builder(driver).workers(1).maxFailures(4).build();
    pump.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> driver.parked.containsKey("doomed"));
    assertThat(driver.postponements)
        .filteredOn(p -> p.id().equals("doomed"))
        .extracting(InMemoryDriver.Postponement::failures)
        .containsExactly(1, 2, 3);
    assertThat(driver.parked.get("doomed")).startsWith("4:IllegalStateException: attempt 4");
    assertThat(driver.handled).containsExactly("fine");
    assertThat(deliveries("parked")).isEqualTo(1);
  }

  @Test
  void aDriverThatCannotParkIsPostponedByTheCapInstead() {
    InMemoryDriver driver =
        new InMemoryDriver()
            .withoutPark()
            .add("doomed")
            .handler((tx, d) -> Outcome.failed(new RuntimeException("never")));
    pump = builder(driver).workers(1).maxFailures(1).build();
    pump.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> !driver.postponements.isEmpty());
    assertThat(driver.postponements.get(0).delay()).isEqualTo(Duration.ofMillis(200));
    assertThat(driver.parked).isEmpty();
  }

  @Test
  void neverMoreThanWorkersPlusOneOpenTransactions() {
    InMemoryDriver driver =
        new InMemoryDriver()
            .handler(
                (tx, d) -> {
                  Thread.sleep(ThreadLocalRandom.current().nextInt(3));
                  return Outcome.HANDLED;
                });
    IntStream.range(0, 2_000).forEach(i -> driver.add("m" + i));
    pump = builder(driver).workers(8).build();
    pump.start();
    await().atMost(Duration.ofSeconds(60)).until(() -> driver.handled.size() == 2_000);
    assertThat(db.maxOpen.get()).isBetween(2, 9);
    pump.close();
    assertThat(db.open.get()).isZero();
  }

  @Test
  void batchCommitsOnceAndRollsBackOnlyTheFailedDelivery() {
    InMemoryDriver driver = new InMemoryDriver();
    AtomicInteger effects = new AtomicInteger();
    driver
        .add("a", "b", "c", "d", "e")
        .handler(
            (tx, d) -> {
              InMemoryDriver.fake(tx).write(effects::incrementAndGet);
              if (d.messageId().equals("c")) {
                throw new IllegalStateException("c fails");
              }
              return Outcome.HANDLED;
            });
    pump = builder(driver).workers(1).batchSize(5).build();
    pump.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> driver.handled.size() == 4);
    assertThat(driver.handled).containsExactlyInAnyOrder("a", "b", "d", "e");
    assertThat(driver.postponements).extracting(InMemoryDriver.Postponement::id).startsWith("c");
    // The first batch held all five: one commit carried four handled and one postponed delivery.
    assertThat(effects.get()).isEqualTo(4);
    assertThat(db.commits.get()).isGreaterThanOrEqualTo(1);
  }

  @Test
  void closeDrainsInFlightHandlersWithinTheGracePeriod() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    InMemoryDriver driver =
        new InMemoryDriver()
            .add("slow")
            .handler(
                (tx, d) -> {
                  started.countDown();
                  Thread.sleep(300);
                  return Outcome.HANDLED;
                });
    pump = builder(driver).workers(1).build();
    pump.start();
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    pump.close();
    assertThat(driver.handled).containsExactly("slow");
    assertThat(pump.isRunning()).isFalse();
  }

  @Test
  void closeInterruptsAndRollsBackWhenTheGracePeriodIsOver() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    InMemoryDriver driver =
        new InMemoryDriver()
            .add("stuck")
            .handler(
                (tx, d) -> {
                  InMemoryDriver.fake(tx).write(() -> {});
                  started.countDown();
                  Thread.sleep(60_000);
                  return Outcome.HANDLED;
                });
    pump = builder(driver).workers(1).shutdownGrace(Duration.ofMillis(500)).build();
    pump.start();
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    long t0 = System.nanoTime();
    pump.close();
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertThat(tookMs).isLessThan(1_500);
    assertThat(driver.handled).isEmpty();
    assertThat(driver.items).containsKey("stuck");
    assertThat(db.aborts.get() + db.rollbacks.get()).isPositive();
    await().atMost(Duration.ofSeconds(5)).until(() -> db.open.get() == 0);
  }

  @Test
  void acquisitionErrorsBackOffAndThePumpRecovers() {
    InMemoryDriver driver = new InMemoryDriver().add("a", "b", "c");
    db.down = true;
    pump = builder(driver).workers(2).build();
    pump.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> db.connectionAttempts.get() >= 5);
    int before = db.connectionAttempts.get();
    long t0 = System.nanoTime();
    await().pollDelay(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).until(() -> true);
    int during = db.connectionAttempts.get() - before;
    // Without backoff a 20 ms poll interval would give ~50 attempts a second, a hot loop ~10^5;
    // with base 10 ms and cap 200 ms the jittered delays average well above 40 ms.
    assertThat(during).isLessThan(40);
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isGreaterThanOrEqualTo(1_000);
    assertThat(registry.get("messagepump.acquisition.errors").counter().count()).isGreaterThan(4);
    assertThat(pump.isRunning()).isTrue();
    db.down = false;
    await().atMost(Duration.ofSeconds(10)).until(() -> driver.handled.size() == 3);
  }

  @Test
  void healthIsDegradedWhileAcquisitionFailsAndRunningOnceItWorks() {
    InMemoryDriver driver = new InMemoryDriver().add("a");
    pump = builder(driver).workers(1).build();
    assertThat(pump.health().state()).isEqualTo(PumpHealth.State.STOPPED);
    db.down = true;
    java.time.Instant before = java.time.Instant.now();
    pump.start();
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> pump.health().state() == PumpHealth.State.DEGRADED);
    PumpHealth degraded = pump.health();
    assertThat(degraded.degradedSince()).isBetween(before, java.time.Instant.now());
    assertThat(degraded.lastError()).isNotBlank();
    db.down = false;
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> pump.health().equals(new PumpHealth(PumpHealth.State.RUNNING, null, null)));
    pump.close();
    assertThat(pump.health().state()).isEqualTo(PumpHealth.State.STOPPED);
  }

  @Test
  void builderRejectsBadValuesNamingTheOption() {
    MessagePump.Builder b = MessagePump.builder(db.dataSource());
    assertThatThrownBy(() -> b.workers(0)).hasMessageContaining("workers");
    assertThatThrownBy(() -> b.batchSize(0)).hasMessageContaining("batchSize");
    assertThatThrownBy(() -> b.batchSize(65)).hasMessageContaining("64");
    assertThatThrownBy(() -> b.backoffCap(Duration.ofDays(40_000)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("36500 days");
    assertThatThrownBy(() -> b.pollInterval(Duration.ZERO)).hasMessageContaining("pollInterval");
    assertThatThrownBy(() -> b.backoffBase(Duration.ofMillis(-1)))
        .hasMessageContaining("backoffBase");
    assertThatThrownBy(() -> b.backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffCap");
    assertThatThrownBy(() -> b.maxFailures(0)).hasMessageContaining("maxFailures");
    assertThatThrownBy(() -> b.shutdownGrace(Duration.ofSeconds(-1)))
        .hasMessageContaining("shutdownGrace");
    assertThatThrownBy(() -> b.name("has space")).hasMessageContaining("name");
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("driver");
    assertThatThrownBy(
            () ->
                MessagePump.builder(db.dataSource())
                    .driver(new InMemoryDriver())
                    .backoffBase(Duration.ofSeconds(10))
                    .backoffCap(Duration.ofSeconds(1))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffCap");
  }

  @Test
  void builderRejectsNullWithAnIllegalArgumentNamingTheOption() {
    MessagePump.Builder b = MessagePump.builder(db.dataSource());
    assertNullRefused(() -> MessagePump.builder(null), "dataSource");
    assertNullRefused(() -> b.name(null), "name");
    assertNullRefused(() -> b.driver(null), "driver");
    assertNullRefused(() -> b.pollInterval(null), "pollInterval");
    assertNullRefused(() -> b.backoffBase(null), "backoffBase");
    assertNullRefused(() -> b.backoffCap(null), "backoffCap");
    assertNullRefused(() -> b.backoff(null, Duration.ofSeconds(1)), "backoffBase");
    assertNullRefused(() -> b.backoff(Duration.ofSeconds(1), null), "backoffCap");
    assertNullRefused(() -> b.shutdownGrace(null), "shutdownGrace");
    assertNullRefused(() -> b.threadFactory(null), "threadFactory");
    assertNullRefused(() -> b.meterRegistry(null), "meterRegistry");
    assertNullRefused(() -> b.handlerTimeout(null), "handlerTimeout");
    assertNullRefused(() -> b.handlerTimeout(null, Duration.ofSeconds(1)), "messageType");
    assertNullRefused(() -> b.handlerTimeout("orders.Place", null), "handlerTimeout");
    assertNullRefused(() -> b.notificationsDataSource(null), "notificationsDataSource");
    // Nothing refused was kept: the builder still lacks only its driver.
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("driver");
  }

  private static void assertNullRefused(
      org.assertj.core.api.ThrowableAssert.ThrowingCallable call, String option) {
    assertThatThrownBy(call)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(option)
        .hasMessageContaining("null");
  }

  @Test
  void startsOnceAndNamesItsThreads() {
    InMemoryDriver driver = new InMemoryDriver();
    pump = builder(driver).workers(2).build();
    pump.start();
    assertThat(pump.isRunning()).isTrue();
    assertThatThrownBy(pump::start).isInstanceOf(IllegalStateException.class);
    assertThat(Thread.getAllStackTraces().keySet())
        .extracting(Thread::getName)
        .contains("pump-test-dispatcher");
    driver.add("x");
    pump.wake();
    await().atMost(Duration.ofSeconds(5)).until(() -> driver.handled.contains("x"));
    assertThat(Thread.getAllStackTraces().keySet())
        .extracting(Thread::getName)
        .contains("pump-test-worker-1");
    pump.close();
    assertThat(pump.isRunning()).isFalse();
  }
}
