package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.NewCommand;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.AcquisitionGate;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.resilience4j.ResilientDriver;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 11: a downstream outage. Three command types; the downstream of one ("pay") fails for 30
 * s (6 s in the fast set); {@code maxFailures} 5 and a circuit breaker on that type. Compared with
 * a clean run of the same backlog and pump: nothing parked, the other two types run at ≥ 80% of
 * their clean rate during the outage, "pay" is handled again within the breaker's wait + 2 s of the
 * downstream's recovery, and the acquisitions of "pay" during the outage are reported and bounded
 * by the breaker's probes.
 */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class DownstreamOutageIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  private static final int WORKERS = 4;
  private static final int MAX_FAILURES = 5;
  private static final int WINDOW = 5; // failures that open the breaker (and its minimum calls)
  private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

  /** Counts what the command driver acquired of "pay", and when. */
  static final class PayAcquisitions extends ForwardingDriver {
    final AtomicLong count = new AtomicLong();

    PayAcquisitions(org.messagepump.core.spi.Driver d) {
      super(d);
    }

    @Override
    public List<Delivery> acquire(Tx tx, int max, AcquisitionGate gate) throws SQLException {
      List<Delivery> r = super.acquire(tx, max, gate);
      for (Delivery d : r) {
        if (d.messageType().equals("pay")) {
          count.incrementAndGet();
        }
      }
      return r;
    }
  }

  /** One run's figures. */
  record Run(
      double otherRate,
      long payAcquiredDuringOutage,
      long probes,
      long resumedAfterMillis,
      long parked) {}

  @Test
  void anOutageOfOneTypeStopsOnlyThatTypeAndItResumesAfterTheBreakersWait(TestDatabase db)
      throws Exception {
    Duration outage = Duration.ofSeconds(Chaos.size(30, 6));
    Duration wait = Duration.ofSeconds(Chaos.size(5, 2));
    // Each handler "calls its downstream" for 10 ms, so the others' rate is bounded by the workers
    // they get, which is what an outage of another type must not take from them.
    int others = Chaos.size(5_000, 1_200); // per type; more than the window can drain
    int pay = Chaos.size(400, 150);
    CommandQueue queue = COMMANDS.queue();

    // A warm-up run first (JIT, the database's caches): the first run in a fresh JVM was several
    // times slower than the next, which would flatter the outage run.
    run(db, queue, others, pay, Duration.ofSeconds(Chaos.size(10, 4)), wait, false);
    Run clean = run(db, queue, others, pay, outage, wait, false);
    Run down = run(db, queue, others, pay, outage, wait, true);

    double ratio = down.otherRate() / clean.otherRate();
    long bound = WINDOW + WORKERS + (outage.toMillis() / wait.toMillis() + 1) * WORKERS;
    ChaosReport.of("11-downstream-outage")
        .put("outageSeconds", outage.toSeconds())
        .put("breakerWaitSeconds", wait.toSeconds())
        .put("maxFailures", MAX_FAILURES)
        .put("workers", WORKERS)
        .put("otherCommandsPerType", others)
        .put("payCommands", pay)
        .put("cleanOtherRatePerSecond", Math.round(clean.otherRate()))
        .put("outageOtherRatePerSecond", Math.round(down.otherRate()))
        .put("otherRateRatio", Math.round(ratio * 100) / 100.0)
        .put("payAcquiredDuringOutage", down.payAcquiredDuringOutage())
        .put("breakerProbes", down.probes())
        .put("payAcquisitionBound", bound)
        .put("payResumedAfterRecoveryMillis", down.resumedAfterMillis())
        .put("parked", down.parked() + clean.parked())
        .write();
    assertThat(down.parked() + clean.parked()).as("parked").isZero();
    assertThat(ratio).as("others' rate during the outage / clean rate").isGreaterThanOrEqualTo(0.8);
    assertThat(down.resumedAfterMillis())
        .as("pay handled again after recovery (ms)")
        .isLessThanOrEqualTo(wait.toMillis() + 2_000);
    assertThat(down.payAcquiredDuringOutage())
        .as("acquisitions of pay during the outage")
        .isLessThanOrEqualTo(bound);
  }

  private Run run(
      TestDatabase db,
      CommandQueue queue,
      int others,
      int pay,
      Duration outage,
      Duration wait,
      boolean withOutage)
      throws Exception {
    db.execute("TRUNCATE commandqueue.commands, commandqueue.dead_letters");
    List<NewCommand> batch = new ArrayList<>();
    for (int i = 0; i < others; i++) {
      batch.add(NewCommand.raw("stock", BODY));
      batch.add(NewCommand.raw("mail", BODY));
      if (i < pay) {
        batch.add(NewCommand.raw("pay", BODY));
      }
      if (batch.size() >= 900) {
        queue.enqueueAll(batch);
        batch.clear();
      }
    }
    queue.enqueueAll(batch);

    AtomicBoolean down = new AtomicBoolean(withOutage);
    AtomicInteger otherHandled = new AtomicInteger();
    AtomicLong recoveredAt = new AtomicLong();
    AtomicLong firstPayAfterRecovery = new AtomicLong();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "pay",
                (b, ctx) -> {
                  Thread.sleep(10);
                  if (down.get()) {
                    throw new IllegalStateException("payment provider unavailable");
                  }
                  long rec = recoveredAt.get();
                  if (rec != 0) {
                    firstPayAfterRecovery.compareAndSet(0, System.nanoTime());
                  }
                })
            .onRaw(
                "stock",
                (b, ctx) -> {
                  Thread.sleep(10);
                  otherHandled.incrementAndGet();
                })
            .onRaw(
                "mail",
                (b, ctx) -> {
                  Thread.sleep(10);
                  otherHandled.incrementAndGet();
                })
            .build();
    PayAcquisitions counted = new PayAcquisitions(queue.driver(handlers));
    ResilientDriver driver =
        ResilientDriver.builder(counted)
            .circuitBreaker(
                "pay",
                CircuitBreakerConfig.custom()
                    .slidingWindowSize(WINDOW)
                    .minimumNumberOfCalls(WINDOW)
                    .failureRateThreshold(50)
                    .waitDurationInOpenState(wait)
                    .permittedNumberOfCallsInHalfOpenState(1)
                    .build())
            .build();
    AtomicLong probes = new AtomicLong();
    driver
        .circuitBreaker("pay")
        .orElseThrow()
        .getEventPublisher()
        .onStateTransition(
            e -> {
              if (e.getStateTransition().getToState() == CircuitBreaker.State.HALF_OPEN) {
                probes.incrementAndGet();
              }
            });
    long payAcquiredDuringOutage;
    long resumedAfter = -1;
    double otherRate;
    try (MessagePump pump =
        MessagePump.builder(db.dataSource())
            .name(withOutage ? "outage" : "clean")
            .driver(driver)
            .workers(WORKERS)
            .pollInterval(Duration.ofMillis(200))
            .backoff(Duration.ofMillis(100), Duration.ofSeconds(2))
            .maxFailures(MAX_FAILURES)
            .build()) {
      long start = System.nanoTime();
      pump.start();
      Chaos.pace(outage); // the measurement window: the outage, or as long in the clean run
      int othersInWindow = otherHandled.get();
      otherRate = othersInWindow / ((System.nanoTime() - start) / 1e9);
      payAcquiredDuringOutage = counted.count.get();
      if (withOutage) {
        down.set(false);
        recoveredAt.set(System.nanoTime());
        await()
            .atMost(wait.plusSeconds(30))
            .pollInterval(Duration.ofMillis(20))
            .until(() -> firstPayAfterRecovery.get() != 0);
        resumedAfter = (firstPayAfterRecovery.get() - recoveredAt.get()) / 1_000_000;
      }
    }
    long parked = db.queryLong("SELECT count(*) FROM commandqueue.dead_letters");
    return new Run(otherRate, payAcquiredDuringOutage, probes.get(), resumedAfter, parked);
  }
}
