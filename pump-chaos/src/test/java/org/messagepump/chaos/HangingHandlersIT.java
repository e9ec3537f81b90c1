package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 7: 2% of the commands hang in their handler, up to 10 s. The others keep flowing at no
 * less than half the rate of a clean run of the same size and workers, and every hung one completes
 * exactly once.
 *
 * <p>A hung handler holds its worker (and its transaction) by design, so the pump needs more
 * workers than hang at a time: about 2% × the hang × throughput, plus the few that a clean drain
 * needs. The scenario runs {@value #WORKERS} workers and sizes the hang from the clean run's rate,
 * so that the hung ones at a time would fill half of them ({@link #hangFor}): a fixed hang would
 * fill every worker on a machine fast enough (at 10 s, past 640 commands/s), and then the pump is
 * simply too small for the fault, which is not what the scenario tests. A backlog drain speeds up
 * until the hung ones nearly fill the workers, so how many hung at most and the longest pause in
 * the flow of the others are reported.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class HangingHandlersIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  static final int WORKERS = 128;

  /** The longest hang. */
  static final Duration HANG = Duration.ofSeconds(10);

  /** The shortest hang, whatever the rate. */
  static final Duration MIN_HANG = Duration.ofSeconds(1);

  /** Every how many commands hangs (2%). */
  static final int HANG_EVERY = 50;

  @Test
  void hungHandlersDoNotStopTheFlow(TestDatabase db) {
    int commands = Chaos.size(10_000, 2_000);
    int hung = commands / HANG_EVERY;
    CommandQueue queue = COMMANDS.queue();
    Ledger ledger = Ledger.install(db.dataSource());

    HikariDataSource pool = db.newDataSource("hanging-handlers", WORKERS + 4);
    warm(pool);
    run(pool, db, queue, ledger, Math.min(commands, 1_000), null); // JIT and claim paths warm
    Run clean = run(pool, db, queue, ledger, commands, null);
    assertThat(ledger.figures().exactlyOnce()).as("clean run exactly once").isTrue();
    Duration hang = hangFor(clean.flowPerSecond());
    Run hanging = run(pool, db, queue, ledger, commands, hang);
    Ledger.Figures f = ledger.figures();
    long hungRows = ledger.queryLong("SELECT count(*) FROM chaos.ledger WHERE node = 'hung'");
    long hungDistinct =
        ledger.queryLong("SELECT count(DISTINCT message_id) FROM chaos.ledger WHERE node = 'hung'");
    long hungLater =
        ledger.queryLong("SELECT count(*) FROM chaos.ledger WHERE node = 'hung' AND attempt <> 1");
    // The longest pause in the flow of the others while handlers hung (reported, not asserted).
    long longestFlowGapMs =
        ledger.queryLong(
            "SELECT coalesce(max(extract(epoch FROM gap) * 1000), 0)::bigint FROM (SELECT"
                + " handled_at - lag(handled_at) OVER (ORDER BY handled_at) AS gap"
                + " FROM chaos.ledger WHERE node = 'flow') g");
    double ratio = hanging.flowPerSecond() / clean.flowPerSecond();
    ChaosReport.of("7-hanging-handlers")
        .put("commands", commands)
        .put("hung", hung)
        .put("hangMs", hang.toMillis())
        .put("workers", WORKERS)
        .put(f)
        .put("hungInvocations", hanging.hungInvocations())
        .put("maxHungAtATime", hanging.maxHungAtATime())
        .put("hungLedgerRows", hungRows)
        .put("longestFlowGapMs", longestFlowGapMs)
        .put("cleanPerSecond", Math.round(clean.flowPerSecond()))
        .put("othersPerSecondWithHangs", Math.round(hanging.flowPerSecond()))
        .put("throughputRatio", Math.round(ratio * 100) / 100.0)
        .put("cleanDrainMs", clean.drain())
        .put("drainWithHangsMs", hanging.drain())
        .write();
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(hanging.hungInvocations()).as("hung handlers invoked once each").isEqualTo(hung);
    assertThat(hungRows).as("hung ones completed").isEqualTo(hung);
    assertThat(hungDistinct).as("hung ones completed once each").isEqualTo(hung);
    assertThat(hungLater).as("hung ones completed on their first attempt").isZero();
    assertThat(ratio).as("others' rate with hangs / clean rate").isGreaterThanOrEqualTo(0.5);
  }

  /**
   * How long a hung handler hangs: as long as makes the hung ones at a time, {@code rate /
   * HANG_EVERY × hang}, half of the workers at the clean run's rate; between {@link #MIN_HANG} and
   * {@link #HANG}.
   */
  static Duration hangFor(double cleanPerSecond) {
    double seconds = WORKERS / 2.0 * HANG_EVERY / cleanPerSecond;
    long millis = Math.round(seconds * 1000);
    return Duration.ofMillis(Math.max(MIN_HANG.toMillis(), Math.min(HANG.toMillis(), millis)));
  }

  /** Opens every connection of the pool once, so neither run pays for creating them. */
  private static void warm(HikariDataSource pool) {
    List<Connection> held = new ArrayList<>();
    try {
      for (int i = 0; i < WORKERS + 2; i++) {
        held.add(pool.getConnection());
      }
      for (Connection c : held) {
        c.close();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("warming the pool failed", e);
    }
  }

  /** One drain's figures. */
  record Run(double flowPerSecond, Duration drain, int hungInvocations, int maxHungAtATime) {}

  /**
   * Enqueues {@code commands}, drains them with {@link #WORKERS} workers, every {@link
   * #HANG_EVERY}th command hanging {@code hang} (none when null), and returns the rate of the
   * commands that did not hang (from the start to the last of them, by the database clock).
   */
  private static Run run(
      DataSource pool,
      TestDatabase db,
      CommandQueue queue,
      Ledger ledger,
      int commands,
      Duration hang) {
    boolean hangs = hang != null;
    db.execute("TRUNCATE commandqueue.commands, commandqueue.dead_letters");
    ledger.reset();
    for (int i = 0; i < commands; i += 1_000) {
      Chaos.enqueue(queue, ledger, i, Math.min(commands, i + 1_000));
    }
    AtomicInteger hungNow = new AtomicInteger();
    AtomicInteger maxHung = new AtomicInteger();
    AtomicInteger hungInvocations = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Work.class,
                (w, ctx) -> {
                  String node = "flow";
                  if (hangs && w.n() % HANG_EVERY == HANG_EVERY - 1) {
                    node = "hung";
                    hungInvocations.incrementAndGet();
                    maxHung.accumulateAndGet(hungNow.incrementAndGet(), Math::max);
                    try {
                      Thread.sleep(hang.toMillis()); // the fault: a handler stuck
                    } finally {
                      hungNow.decrementAndGet();
                    }
                  }
                  Ledger.record(
                      ctx.tx().connection(), ctx.messageId().toString(), ctx.attempt(), node);
                })
            .build();
    MessagePump pump =
        MessagePump.builder(pool)
            .name(hangs ? "hanging" : "clean")
            .driver(queue.driver(handlers))
            .workers(WORKERS)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(10), Duration.ofMillis(100))
            .shutdownGrace(Duration.ofSeconds(20))
            .build();
    Instant start = ledger.mark("start");
    pump.start();
    try {
      Chaos.awaitHandled(ledger, commands, Duration.ofSeconds(300));
    } finally {
      pump.close();
    }
    long flow = ledger.queryLong("SELECT count(*) FROM chaos.ledger WHERE node = 'flow'");
    long lastFlowMicros =
        ledger.queryLong(
            "SELECT (extract(epoch FROM max(handled_at)) * 1000000)::bigint FROM chaos.ledger"
                + " WHERE node = 'flow'");
    long lastMicros =
        ledger.queryLong(
            "SELECT (extract(epoch FROM max(handled_at)) * 1000000)::bigint FROM chaos.ledger");
    long startMicros = start.getEpochSecond() * 1_000_000 + start.getNano() / 1_000;
    double seconds = (lastFlowMicros - startMicros) / 1e6;
    return new Run(
        flow / seconds,
        Duration.ofNanos((lastMicros - startMicros) * 1_000),
        hungInvocations.get(),
        maxHung.get());
  }
}
