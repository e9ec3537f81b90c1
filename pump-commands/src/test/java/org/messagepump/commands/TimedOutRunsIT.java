package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * A timed-out delivery runs once at a time and at most {@code maxFailures} times: its failure is
 * counted and its backoff applied before anyone can take it again, whatever its handler does with
 * the interrupt. Every command of a round times out on every run and parks after {@value
 * #MAX_FAILURES} runs; each run is tracked in memory (the pumps of both "processes", each with its
 * own pool, share this JVM), so a second run that starts while the first is still inside its
 * handler, in the same pump or the other, is seen.
 */
@ExtendWith(PostgresExtension.class)
class TimedOutRunsIT {

  static final Duration TIMEOUT = Duration.ofMillis(100);
  static final int MAX_FAILURES = 2;

  /** What the handler does with its timeout. */
  enum Handler {
    /** Sleeps; the interrupt ends it. */
    INTERRUPTIBLE,
    /**
     * Swallows the interrupt, sleeps on, writes through a statement it prepared before, and returns
     * normally.
     */
    SWALLOWS_INTERRUPT,
    /** Blocks in {@code SELECT pg_sleep(60)} on the pump's connection (deaf to interrupts). */
    STUCK_IN_PG_SLEEP
  }

  /** Pumps, each with its own pool (a process), and workers per pump. */
  record Topology(int pumps, int workers) {
    @Override
    public String toString() {
      return pumps + " pump(s) x " + workers + " worker(s)";
    }
  }

  @RegisterExtension
  static final CommandQueueFixture COMMANDS =
      CommandQueueFixture.of(Fixtures.CODEC)
          .table("half_written", "CREATE TABLE half_written (note text)");

  private final CommandQueue queue = COMMANDS.queue();

  static Stream<Arguments> cases() {
    List<Arguments> all = new ArrayList<>();
    for (Handler h : Handler.values()) {
      // Enough rounds for every worker to time out several commands, about a quarter of a second
      // each; the full 50 of every case run in the chaos suite, below.
      all.add(Arguments.of(h, new Topology(1, 1), 6));
      all.add(Arguments.of(h, new Topology(1, 4), 24));
      all.add(Arguments.of(h, new Topology(2, 1), 12));
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0}, {1}, {2} rounds")
  @MethodSource("cases")
  void aTimedOutDeliveryRunsOnceAtATimeAndAtMostMaxFailuresTimes(
      Handler handler, Topology topology, int rounds, TestDatabase db) {
    scenario(db, handler, topology, rounds);
  }

  @Test
  @Tag("chaos")
  void fiftyRoundsOfEveryHandlerAndTopology(TestDatabase db) {
    for (Handler h : Handler.values()) {
      for (Topology t : List.of(new Topology(1, 1), new Topology(1, 4), new Topology(2, 1))) {
        COMMANDS.tables().empty();
        scenario(db, h, t, 50);
      }
    }
  }

  /** One run of a command's handler. */
  private static final class Runs {
    final AtomicInteger running = new AtomicInteger();
    final AtomicInteger mostAtOnce = new AtomicInteger();
    final AtomicInteger started = new AtomicInteger();
  }

  private void scenario(TestDatabase db, Handler handler, Topology topology, int rounds) {
    Map<String, Runs> runs = new ConcurrentHashMap<>();
    AtomicLong longestRunNanos = new AtomicLong();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  Runs r = runs.computeIfAbsent(ctx.messageId(), k -> new Runs());
                  r.started.incrementAndGet();
                  r.mostAtOnce.accumulateAndGet(r.running.incrementAndGet(), Math::max);
                  long start = System.nanoTime();
                  try {
                    run(handler, ctx);
                  } finally {
                    r.running.decrementAndGet();
                    longestRunNanos.accumulateAndGet(System.nanoTime() - start, Math::max);
                  }
                })
            .build();
    for (int i = 0; i < rounds; i++) {
      queue.enqueue(new PlaceOrder("round-" + i));
    }
    long t0 = System.nanoTime();
    List<MessagePump> pumps = new ArrayList<>();
    try {
      for (int p = 0; p < topology.pumps(); p++) {
        String name = "timeouts-" + handler.name().toLowerCase().replace('_', '-') + "-" + p;
        DataSource pool = db.newDataSource(name, topology.workers() + 2);
        MessagePump pump =
            MessagePump.builder(pool)
                .name(name)
                .driver(queue.driver(handlers))
                .workers(topology.workers())
                .pollInterval(Duration.ofMillis(20))
                .backoff(Duration.ofMillis(10), Duration.ofMillis(20))
                .maxFailures(MAX_FAILURES)
                .handlerTimeout(TIMEOUT)
                .build();
        pumps.add(pump);
        pump.start();
      }
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> queue.operations().deadLetters().count() == rounds);
    } finally {
      pumps.forEach(MessagePump::close);
    }
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    long runTwiceAtOnce = runs.values().stream().filter(r -> r.mostAtOnce.get() > 1).count();
    long runTooOften = runs.values().stream().filter(r -> r.started.get() > MAX_FAILURES).count();
    int mostRuns = runs.values().stream().mapToInt(r -> r.started.get()).max().orElse(0);
    System.out.printf(
        "TimedOutRunsIT %s, %s: %d rounds in %d ms, longest run %d ms; commands run twice at once"
            + " %d, run more than %d times %d (most runs %d)%n",
        handler,
        topology,
        rounds,
        tookMs,
        TimeUnit.NANOSECONDS.toMillis(longestRunNanos.get()),
        runTwiceAtOnce,
        MAX_FAILURES,
        runTooOften,
        mostRuns);

    DataSource ds = db.dataSource();
    assertThat(runs).hasSize(rounds);
    assertThat(runTwiceAtOnce).as("commands whose runs overlapped").isZero();
    assertThat(runTooOften).as("commands run more than maxFailures times").isZero();
    // At least one run each (a timeout that fires before the handler is entered counts a failure
    // no handler saw).
    assertThat(runs.values()).allSatisfy(r -> assertThat(r.started.get()).isPositive());
    // Every command parked after MAX_FAILURES counted timeouts, none left pending.
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.dead_letters WHERE failures = ?"
                    + " AND last_error LIKE '%HandlerTimeoutException%'",
                MAX_FAILURES))
        .isEqualTo(rounds);
    assertThat(Fixtures.pending(ds)).isZero();
    // Nothing a timed-out handler wrote committed, before its timeout or after it.
    assertThat(count(ds, "SELECT count(*) FROM half_written")).isZero();
    if (handler == Handler.STUCK_IN_PG_SLEEP) {
      // The cancel ended each sleep (60 s otherwise), and no backend is left running one.
      assertThat(longestRunNanos.get()).isLessThan(TimeUnit.SECONDS.toNanos(10));
      assertThat(
              count(
                  ds,
                  "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%'"
                      + " AND state = 'active' AND pid <> pg_backend_pid()"))
          .isZero();
    }
  }

  private static void run(Handler handler, CommandContext ctx) throws Exception {
    write(ctx, handler.name());
    switch (handler) {
      case INTERRUPTIBLE -> Thread.sleep(60_000);
      case SWALLOWS_INTERRUPT -> {
        try (PreparedStatement late =
            ctx.tx().connection().prepareStatement("INSERT INTO half_written VALUES (?)")) {
          long until = System.nanoTime() + 2 * TIMEOUT.toNanos();
          for (long left; (left = until - System.nanoTime()) > 0; ) {
            try {
              TimeUnit.NANOSECONDS.sleep(left);
            } catch (InterruptedException swallowed) {
              // ignores its timeout and sleeps on
            }
          }
          late.setString(1, "after the timeout, through a statement prepared before");
          late.executeUpdate();
          try {
            write(ctx, "after the timeout, through a new statement");
          } catch (SQLException refused) {
            // the pump's connection is refused to a timed-out handler
          }
        }
      }
      case STUCK_IN_PG_SLEEP -> {
        try (Statement s = ctx.tx().connection().createStatement()) {
          s.execute("SELECT pg_sleep(60)");
        }
      }
    }
  }

  private static void write(CommandContext ctx, String note) throws SQLException {
    try (PreparedStatement ps =
        ctx.tx().connection().prepareStatement("INSERT INTO half_written VALUES (?)")) {
      ps.setString(1, note);
      ps.executeUpdate();
    }
  }
}
