package org.messagepump.resilience4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.spi.AcquisitionGate;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.testkit.PostgresExtension;

/**
 * Breakers, rate limiters and bulkheads around the command queue's driver, through the pump's real
 * poll path (PumpTester and MessagePump).
 */
@ExtendWith(PostgresExtension.class)
class ResilientDriverIT {

  private static final JsonMessageCodec CODEC = JsonMessageCodec.of(MessageTypes.builder().build());
  private static final byte[] BODY = "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  private CommandQueue queue;
  private DataSource ds;

  @BeforeEach
  void setUp(DataSource ds) throws SQLException {
    this.ds = ds;
    CommandOperations.of(ds).migrate();
    queue = CommandQueue.create(ds, CODEC);
    try (Connection c = ds.getConnection()) {
      c.createStatement()
          .execute(
              "TRUNCATE commandqueue.commands, commandqueue.dead_letters,"
                  + " commandqueue.paused_types");
    }
  }

  private void enqueue(String type, int n) {
    for (int i = 0; i < n; i++) {
      queue.enqueueRaw(type, BODY, EnqueueOptions.defaults());
    }
  }

  /** Counts what the inner driver acquired, per type. */
  static final class Counting extends ForwardingDriver {
    final List<String> acquired = java.util.Collections.synchronizedList(new ArrayList<>());
    final boolean ignoreGate;

    Counting(Driver d, boolean ignoreGate) {
      super(d);
      this.ignoreGate = ignoreGate;
    }

    @Override
    public List<Delivery> acquire(Tx tx, int max, AcquisitionGate gate) throws SQLException {
      List<Delivery> r = ignoreGate ? super.acquire(tx, max) : super.acquire(tx, max, gate);
      r.forEach(d -> acquired.add(d.messageType()));
      return r;
    }

    long of(String type) {
      synchronized (acquired) {
        return acquired.stream().filter(type::equals).count();
      }
    }
  }

  private static CircuitBreakerConfig breaker(Duration wait) {
    return CircuitBreakerConfig.custom()
        .slidingWindowSize(3)
        .minimumNumberOfCalls(3)
        .failureRateThreshold(50)
        .waitDurationInOpenState(wait)
        .permittedNumberOfCallsInHalfOpenState(1)
        .build();
  }

  private double dueInSecondsOfOne(String type) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT extract(epoch FROM max(deliver_at) - clock_timestamp()), max(failures)"
                    + " FROM commandqueue.commands WHERE message_type = ?")) {
      ps.setString(1, type);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getInt(2)).isZero();
        return rs.getDouble(1);
      }
    }
  }

  @Test
  void anOpenBreakerStopsAcquisitionOfItsTypeOnlyAndAProbeClosesItAgain() {
    AtomicBoolean down = new AtomicBoolean(true);
    AtomicInteger okHandled = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "pay",
                (b, ctx) -> {
                  if (down.get()) {
                    throw new IllegalStateException("payment service down");
                  }
                })
            .onRaw("ok", (b, ctx) -> okHandled.incrementAndGet())
            .build();
    Counting inner = new Counting(queue.driver(handlers), false);
    ResilientDriver driver =
        ResilientDriver.builder(inner)
            .circuitBreaker("pay", breaker(Duration.ofSeconds(2)))
            .build();
    PumpTester tester =
        PumpTester.builder(ds, driver)
            .maxFailures(50)
            .backoff(Duration.ofMillis(1), Duration.ofMillis(1))
            .build();
    enqueue("pay", 5);
    enqueue("ok", 20);
    CircuitBreaker cb = driver.circuitBreaker("pay").orElseThrow();
    while (cb.getState() != CircuitBreaker.State.OPEN) {
      tester.runOnce();
    }
    long payWhenOpened = inner.of("pay");
    assertThat(payWhenOpened).isEqualTo(3); // the window of three failures
    tester.drainUntilIdle();
    // While open: every "ok" handled, no "pay" acquired, nothing parked.
    assertThat(okHandled).hasValue(20);
    assertThat(inner.of("pay")).isEqualTo(payWhenOpened);
    assertThat(queue.operations().deadLetters().count()).isZero();

    down.set(false);
    // After the wait, one probe (half-open permits one call) closes it; the rest drain.
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () -> {
              tester.runOnce();
              return cb.getState() == CircuitBreaker.State.CLOSED;
            });
    tester.drainUntilIdle();
    assertThat(queue.operations().depth().due() + queue.operations().depth().delayed()).isZero();
    assertThat(inner.of("pay")).isEqualTo(payWhenOpened + 5);
  }

  @Test
  void workAcquiredDespiteAnOpenBreakerIsBusyWithTheBreakersRemainingWait() throws Exception {
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "pay",
                (b, ctx) -> {
                  throw new IllegalStateException("down");
                })
            .build();
    // A driver that ignores the gate (as event streams and the balancer do) still gets Busy.
    Counting inner = new Counting(queue.driver(handlers), true);
    ResilientDriver driver =
        ResilientDriver.builder(inner)
            .circuitBreaker("pay", breaker(Duration.ofSeconds(30)))
            .build();
    driver.circuitBreaker("pay").orElseThrow().transitionToOpenState();
    enqueue("pay", 1);
    List<PumpTester.Result> r =
        PumpTester.builder(ds, driver)
            .maxFailures(1)
            .backoff(Duration.ofMillis(10), Duration.ofMinutes(5))
            .build()
            .runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.BUSY);
    assertThat(dueInSecondsOfOne("pay")).isBetween(25.0, 30.5);
  }

  @Test
  void aRateLimiterAdmitsItsPermitsThenLeavesTheTypeInTheTable() throws Exception {
    AtomicInteger sent = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder().onRaw("mail", (b, ctx) -> sent.incrementAndGet()).build();
    RateLimiterConfig twoPerMinute =
        RateLimiterConfig.custom()
            .limitForPeriod(2)
            .limitRefreshPeriod(Duration.ofMinutes(1))
            .timeoutDuration(Duration.ZERO)
            .build();
    Counting inner = new Counting(queue.driver(handlers), false);
    ResilientDriver driver =
        ResilientDriver.builder(inner).rateLimiter("mail", twoPerMinute).build();
    enqueue("mail", 5);
    PumpTester tester = PumpTester.builder(ds, driver).build();
    assertThat(tester.drainUntilIdle()).hasSize(2);
    assertThat(sent).hasValue(2);
    assertThat(inner.of("mail")).isEqualTo(2); // the other three were never acquired

    // Without the gate, a refused delivery is Busy with the limiter's wait (under a minute).
    Counting ungated = new Counting(queue.driver(handlers), true);
    ResilientDriver second =
        ResilientDriver.builder(ungated).rateLimiter("mail", twoPerMinute).build();
    PumpTester t2 =
        PumpTester.builder(ds, second)
            .backoff(Duration.ofMillis(10), Duration.ofMinutes(5))
            .build();
    t2.runOnce();
    t2.runOnce();
    assertThat(t2.runOnce())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.BUSY);
    assertThat(dueInSecondsOfOne("mail")).isBetween(1.0, 60.5);
  }

  @Test
  void aBulkheadKeepsASlowTypeFromHoldingEveryWorker() {
    AtomicInteger slowNow = new AtomicInteger();
    AtomicInteger slowMost = new AtomicInteger();
    AtomicInteger fastDone = new AtomicInteger();
    AtomicInteger slowDone = new AtomicInteger();
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "slow",
                (b, ctx) -> {
                  slowMost.accumulateAndGet(slowNow.incrementAndGet(), Math::max);
                  try {
                    // Held until every fast command is done: it would hold all four workers
                    // without the bulkhead.
                    assertThat(release.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                  } finally {
                    slowNow.decrementAndGet();
                  }
                  slowDone.incrementAndGet();
                })
            .onRaw("fast", (b, ctx) -> fastDone.incrementAndGet())
            .build();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    ResilientDriver driver =
        ResilientDriver.builder(queue.driver(handlers))
            .bulkhead(
                "slow",
                BulkheadConfig.custom()
                    .maxConcurrentCalls(1)
                    .maxWaitDuration(Duration.ZERO)
                    .build())
            .circuitBreaker(CircuitBreakerConfig.ofDefaults())
            .meterRegistry(registry)
            .build();
    enqueue("slow", 6);
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bulkhead")
            .driver(driver)
            .workers(4)
            .pollInterval(Duration.ofMillis(20))
            .backoff(Duration.ofMillis(20), Duration.ofMillis(100))
            .meterRegistry(registry)
            .build()) {
      pump.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> slowNow.get() == 1);
      enqueue("fast", 30);
      pump.wake();
      // The fast ones all pass while the slow type runs one at a time.
      await().atMost(Duration.ofSeconds(30)).until(() -> fastDone.get() == 30);
      assertThat(slowDone).hasValue(0);
      release.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> slowDone.get() == 6);
    }
    assertThat(slowMost).hasValue(1);
    assertThat(queue.operations().deadLetters().count()).isZero();
    // resilience4j-micrometer wired to the pump's registry.
    assertThat(registry.find("resilience4j.bulkhead.available.concurrent.calls").gauges())
        .isNotEmpty();
    assertThat(registry.find("resilience4j.circuitbreaker.state").gauges()).isNotEmpty();
  }

  @Test
  void guardsThatWouldMakeAWorkerWaitAreRefused() {
    ResilientDriver.Builder b =
        ResilientDriver.builder(
            queue.driver(CommandHandlers.builder().onRaw("mail", (bytes, ctx) -> {}).build()));
    assertThatThrownBy(
            () ->
                b.rateLimiter(
                    "mail",
                    RateLimiterConfig.custom().timeoutDuration(Duration.ofSeconds(1)).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("timeoutDuration");
    assertThatThrownBy(
            () ->
                b.bulkhead(
                    "slow", BulkheadConfig.custom().maxWaitDuration(Duration.ofSeconds(1)).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxWaitDuration");
    assertThatThrownBy(() -> b.circuitBreaker("", CircuitBreakerConfig.ofDefaults()))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
