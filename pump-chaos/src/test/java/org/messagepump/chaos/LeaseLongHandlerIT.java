package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;
import org.messagepump.testkit.VacuumHorizon;

/**
 * A lease-mode handler that runs for five minutes: sampled every 30 s while it runs, the server has
 * no transaction open but the probe's, and vacuum empties a table churned meanwhile (10,000 rows
 * written and deleted, 0 pages left), so a long handler does not hold back the cleaning of any
 * table. The heartbeats keep its two-second lease the whole time and it completes once.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class LeaseLongHandlerIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  private static final Duration LEASE = Duration.ofSeconds(2);
  private static final Duration HANDLER = Duration.ofMinutes(5);
  private static final Duration SAMPLE_EVERY = Duration.ofSeconds(30);

  /** One sample: seconds into the handler, open transactions, pages left, the lease's remainder. */
  record Sample(long atS, long openTransactions, long pagesLeft, long vacuumMs, long leaseLeftMs) {}

  @Test
  void aFiveMinuteHandlerHoldsNoTransactionAndVacuumCleansBehindIt(TestDatabase db)
      throws Exception {
    DataSource ds = db.dataSource();
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    CommandQueue queue = CommandQueue.builder(ds).codec(Work.CODEC).meterRegistry(meters).build();
    CountDownLatch running = new CountDownLatch(1);
    AtomicInteger runs = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Work.class,
                (w, ctx) -> {
                  runs.incrementAndGet();
                  running.countDown();
                  Thread.sleep(HANDLER.toMillis());
                })
            .build();
    queue.enqueue(new Work(1));
    List<Sample> samples = new ArrayList<>();
    long startedNanos;
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("long")
            .driver(queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE)))
            .workers(1)
            .pollInterval(Duration.ofMillis(100))
            .shutdownGrace(Duration.ofSeconds(5))
            .meterRegistry(meters)
            .build()) {
      pump.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      startedNanos = System.nanoTime();
      long handlerEnds = startedNanos + HANDLER.toNanos();
      for (long next = startedNanos;
          next + SAMPLE_EVERY.toNanos() / 2 < handlerEnds;
          next += SAMPLE_EVERY.toNanos()) {
        long wait = next - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(TimeUnit.NANOSECONDS.toMillis(wait));
        }
        Sample s = sample(db, startedNanos);
        samples.add(s);
        System.out.println("LEASE-SAMPLE " + s);
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.queryLong("SELECT count(*) FROM commandqueue.commands") == 0);
    }
    long elapsedS = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startedNanos);
    double heartbeats = counter(meters, "messagepump.leases.heartbeats");
    double lost = counter(meters, "messagepump.leases.lost");
    String line =
        ChaosReport.of("lease-4-five-minute-handler")
            .put("leaseMs", LEASE.toMillis())
            .put("handlerS", HANDLER.toSeconds())
            .put("completedAfterS", elapsedS)
            .put("samples", samples.size())
            .put(
                "maxOpenTransactions",
                samples.stream().mapToLong(Sample::openTransactions).max().orElse(-1))
            .put("maxPagesLeft", samples.stream().mapToLong(Sample::pagesLeft).max().orElse(-1))
            .put("minLeaseLeftMs", samples.stream().mapToLong(Sample::leaseLeftMs).min().orElse(-1))
            .put("heartbeats", (long) heartbeats)
            .put("leasesLost", (long) lost)
            .put("runs", runs.get())
            .write();
    System.out.println("LEASE-FIGURES " + line);

    assertThat(samples).hasSize(10);
    assertThat(samples).allSatisfy(s -> assertThat(s.openTransactions()).isZero());
    assertThat(samples).allSatisfy(s -> assertThat(s.pagesLeft()).isZero());
    assertThat(samples).allSatisfy(s -> assertThat(s.leaseLeftMs()).isPositive());
    assertThat(runs).hasValue(1);
    assertThat(lost).isZero();
    // A beat every third of the lease for five minutes: some 450; half of it allows for load.
    assertThat(heartbeats).isGreaterThan(HANDLER.toMillis() / (LEASE.toMillis() / 3.0) / 2);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isZero();
  }

  private static Sample sample(TestDatabase db, long startedNanos)
      throws SQLException, InterruptedException {
    long at = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startedNanos);
    // The least of three probes 100 ms apart: a heartbeat's transaction (a few ms, every third of
    // the lease) may be caught by one, a transaction held while the handler runs by all three.
    long open = Long.MAX_VALUE;
    for (int i = 0; i < 3; i++) {
      if (i > 0) {
        Thread.sleep(100);
      }
      open =
          Math.min(open, VacuumHorizon.openTransactionsOlderThan(db.dataSource(), Duration.ZERO));
    }
    long t0 = System.nanoTime();
    long pages = VacuumHorizon.pagesLeftAfterChurnAndVacuum(db.dataSource(), "lease_churn");
    long vacuumMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    long leaseLeft =
        db.queryLong(
            "SELECT coalesce(max((extract(epoch FROM deliver_at - clock_timestamp()) * 1000)"
                + "::bigint), -1) FROM commandqueue.commands WHERE leased_by IS NOT NULL");
    return new Sample(at, open, pages, vacuumMs, leaseLeft);
  }

  private static double counter(SimpleMeterRegistry meters, String name) {
    return meters.counter(name, "pump", "long", "driver", "commands").count();
  }
}
