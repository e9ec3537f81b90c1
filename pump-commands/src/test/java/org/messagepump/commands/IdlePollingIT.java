package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.AcquisitionGate;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * An idle pump sends one acquisition per {@code pollInterval}, whatever its number of workers; a
 * backlog still brings in every worker, and a notification still wakes an idle pump at once.
 */
@ExtendWith(PostgresExtension.class)
class IdlePollingIT {

  static final Duration POLL_INTERVAL = Duration.ofMillis(100);

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();

  /** Counts the driver's acquisitions. */
  static final class CountingDriver extends ForwardingDriver {
    final AtomicInteger acquisitions = new AtomicInteger();

    CountingDriver(CommandDriver delegate) {
      super(delegate);
    }

    @Override
    public List<Delivery> acquire(Tx tx, int max) throws SQLException {
      acquisitions.incrementAndGet();
      return super.acquire(tx, max);
    }

    @Override
    public List<Delivery> acquire(Tx tx, int max, AcquisitionGate gate) throws SQLException {
      acquisitions.incrementAndGet();
      return super.acquire(tx, max, gate);
    }
  }

  /**
   * Counted twice: the driver's acquire calls, and on the server the scans of {@code paused_types},
   * which only the command queue's claim reads (at most once per execution), in {@code
   * pg_stat_user_tables}. Those statistics reach the server's view when a backend ends at the
   * latest, so the pump's pool is closed before they are read.
   */
  @ParameterizedTest(name = "{0} workers")
  @ValueSource(ints = {1, 4, 16})
  void anIdlePumpSendsOneAcquisitionPerPollIntervalWhateverItsWorkers(int workers, TestDatabase db)
      throws Exception {
    CountingDriver driver =
        new CountingDriver(
            queue.driver(CommandHandlers.builder().on(PlaceOrder.class, (c, ctx) -> {}).build()));
    String name = "idle-" + workers;
    HikariDataSource pool = db.newDataSource(name, workers + 2);
    // Pumps of the other tests of this class have ended, and their backends with them: no claim
    // statistics of theirs arrive during this one.
    awaitGone(db, "idle-%");
    awaitGone(db, "backlog");
    awaitGone(db, "woken");
    long scansBefore = pausedTypesScans(db);
    long t0 = System.nanoTime();
    try (MessagePump pump =
        MessagePump.builder(pool)
            .name(name)
            .driver(driver)
            .workers(workers)
            .pollInterval(POLL_INTERVAL)
            .build()) {
      pump.start();
      // A measuring window, not a wait for a condition: how many polls an idle pump sends in it.
      Thread.sleep(2_000);
    }
    long windowNanos = System.nanoTime() - t0;
    int acquisitions = driver.acquisitions.get();
    // One at the start, one when the notification listener starts (work may have come meanwhile),
    // then one per interval at most.
    long most = windowNanos / POLL_INTERVAL.toNanos() + 3;
    System.out.printf(
        "IdlePollingIT: %d workers, %d acquisitions in %d ms (at most %d)%n",
        workers, acquisitions, TimeUnit.NANOSECONDS.toMillis(windowNanos), most);
    pool.close();
    awaitGone(db, name);
    assertThat(acquisitions).isBetween(3, (int) most);
    // The server ran no claim the driver did not count: at most one scan of paused_types per
    // counted acquisition (every backend of the pool has ended, so its statistics are in). Not
    // exactly one, and possibly none: the pause check is a NOT EXISTS correlated with each
    // candidate command, which PostgreSQL runs as an anti-join, and with an empty queue the
    // join may end on its empty outer side without reading paused_types at all (a nested loop
    // always does; a hash join does when it reads the outer side first). Which plan the claim
    // gets depends on the statistics that the other tests' commands left, so with 16 workers the
    // statistics have shown 20 counted claims with fewer scans, once with none.
    assertThat(pausedTypesScans(db) - scansBefore)
        .as("claim statements the server ran")
        .isBetween(0L, (long) acquisitions);
  }

  @Test
  void aBacklogBringsInEveryWorker(TestDatabase db) throws Exception {
    int workers = 16;
    // Each handler holds its worker until all sixteen are in: the test does not depend on how
    // fast the workers come in (one after another, each woken by a poll that found work, so the
    // ramp takes sixteen claims' time, over a second on a loaded machine), only on whether they
    // all come in without waiting for the poll interval, which is longer than the wait below.
    CountDownLatch allIn = new CountDownLatch(workers);
    AtomicInteger running = new AtomicInteger();
    AtomicInteger mostAtOnce = new AtomicInteger();
    CountDownLatch done = new CountDownLatch(2 * workers);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
                  allIn.countDown();
                  try {
                    allIn.await(20, TimeUnit.SECONDS);
                  } finally {
                    running.decrementAndGet();
                    done.countDown();
                  }
                })
            .build();
    for (int i = 0; i < 2 * workers; i++) {
      queue.enqueue(new PlaceOrder("o" + i));
    }
    long rampMillis;
    try (HikariDataSource pool = db.newDataSource("backlog", workers + 2);
        MessagePump pump =
            MessagePump.builder(pool)
                .name("backlog")
                .driver(queue.driver(handlers))
                .workers(workers)
                .pollInterval(Duration.ofSeconds(60))
                .notifications(false)
                .build()) {
      long start = System.nanoTime();
      pump.start();
      boolean all = allIn.await(20, TimeUnit.SECONDS);
      rampMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(all).as("all %d workers busy within 20 s (poll interval 60 s)", workers).isTrue();
      assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
    }
    System.out.println("backlog ramp: " + workers + " workers busy after " + rampMillis + " ms");
    // Each poll that found work let one more worker poll at once: all sixteen were busy together,
    // with no wait for the (long) poll interval.
    assertThat(mostAtOnce).hasValue(workers);
  }

  /** Waits until no backend of a pool whose application name is like {@code pattern} is left. */
  private static void awaitGone(TestDatabase db, String pattern) {
    // The pattern is a constant of this class or a pump name built from a number.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                db.queryLong(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '"
                            + pattern
                            + "'")
                    == 0);
  }

  @Test
  void aNotificationWakesAnIdlePumpOfManyWorkersAtOnce(TestDatabase db) throws Exception {
    CountDownLatch handled = new CountDownLatch(1);
    CountingDriver driver =
        new CountingDriver(
            queue.driver(
                CommandHandlers.builder()
                    .on(PlaceOrder.class, (c, ctx) -> handled.countDown())
                    .build()));
    try (HikariDataSource pool = db.newDataSource("woken", 18);
        MessagePump pump =
            MessagePump.builder(pool)
                .name("woken")
                .driver(driver)
                .workers(16)
                .pollInterval(Duration.ofMinutes(5))
                .build()) {
      pump.start();
      // Idle (the first probe found nothing) and listening (LISTEN has run and committed).
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  driver.acquisitions.get() >= 1
                      && db.queryLong(
                              "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
                                  + " 'woken' AND state = 'idle' AND query LIKE 'LISTEN%'")
                          == 1);
      long t0 = System.nanoTime();
      queue.enqueue(new PlaceOrder("wake")); // its NOTIFY is the only way to learn of it
      assertThat(handled.await(30, TimeUnit.SECONDS)).isTrue();
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.out.printf("IdlePollingIT: woken and handled %d ms after the enqueue%n", tookMs);
      assertThat(tookMs).isLessThan(Duration.ofMinutes(5).toMillis() / 10);
    }
  }

  private static long pausedTypesScans(TestDatabase db) {
    return db.queryLong(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables"
            + " WHERE schemaname = 'commandqueue' AND relname = 'paused_types'");
  }
}
