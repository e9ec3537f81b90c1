package org.messagepump.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.chaos.NodeMain;
import org.messagepump.chaos.Work;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.NodeProcess;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueResult;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.Tx;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;

/**
 * Pump processes scale out with no coordination but the database: N pump JVMs (pump-chaos's
 * NodeMain, 4 workers each) drain a backlog on the primary of the formation (synchronous standby),
 * and the rate each N reaches is measured from the ledger. The primary's write rate is the ceiling.
 * Nothing is sized for a particular machine: once the processes are warm, their drain rate is
 * measured, the window is sized from it and the backlog topped up until it lasts that window three
 * times over; a window in which the backlog ran out fails the test rather than understating the
 * rate. Every preloaded message is acknowledged in the ledger; once the processes have stopped,
 * each one must be either delivered exactly once (in the ledger) or still waiting in its table:
 * lost (neither) and duplicates (twice in the ledger) are counted and must be zero.
 */
class ScaleOutIT {

  private static final int WORKERS = 4;

  /** Messages per process preloaded before the processes start: their warm-up. */
  private static final int WARM_UP = 2_000;

  /** A measurement of the drain rate that sizes the window and the backlog. */
  private static final Duration CALIBRATION = Duration.ofSeconds(2);

  /**
   * The window holds about this many deliveries, within {@link #MIN_WINDOW}..{@link #MAX_WINDOW}.
   */
  private static final int WINDOW_DELIVERIES = 20_000;

  private static final Duration MIN_WINDOW = Duration.ofSeconds(5);
  private static final Duration MAX_WINDOW = Duration.ofSeconds(20);

  /**
   * The backlog waiting when the window starts lasts the window this many times at the rate. The
   * rate measured right after a top-up can be lower than the window's (1.7 times lower seen), as
   * the primary and its synchronous standby catch up on the bulk insert.
   */
  private static final int MARGIN = 3;

  /** Calibrations before giving up on sizing the backlog. */
  private static final int MAX_ROUNDS = 6;

  private static HikariDataSource admin;

  @BeforeAll
  static void startCluster() {
    Cluster.start();
    Cluster.run("wait-healthy", "300");
    Cluster.run("sync", "on");
    admin = Cluster.pool(Cluster.multiHostUrl(), "admin-scale", 4);
    CommandOperations.of(admin).migrate();
    EventOperations.of(admin).migrate();
    BalancerOperations.of(admin).migrate();
  }

  @AfterAll
  static void close() {
    if (admin != null) {
      admin.close();
    }
  }

  @Test
  void commandPumpProcessesScaleOutUpToThePrimarysWriteRate() throws Exception {
    Map<Integer, Run> runs = new LinkedHashMap<>();
    for (int n : new int[] {1, 2, 4}) {
      runs.put(n, rate("commands", n));
    }
    ChaosReport r = ChaosReport.of("scale-out-commands").put("workersPerProcess", WORKERS);
    runs.forEach((n, run) -> run.report(r, "processes" + n));
    r.write();
    runs.values().forEach(ScaleOutIT::check);
  }

  @Test
  void eventAndBalancerProcessesAtTwo() throws Exception {
    Run events = rate("events", 2);
    Run balancer = rate("balancer", 2);
    ChaosReport r = ChaosReport.of("scale-out-events-balancer").put("workersPerProcess", WORKERS);
    events.report(r, "eventsProcesses2");
    balancer.report(r, "balancerProcesses2");
    r.write();
    check(events);
    check(balancer);
  }

  /**
   * One measured run: the rate over the window, and, once the processes stopped, what was
   * acknowledged, delivered, duplicated, still waiting and lost (neither delivered nor waiting).
   */
  private record Run(
      double perSecond,
      double calibratedPerSecond,
      Duration window,
      long waitingAtEnd,
      long acknowledged,
      long handled,
      long duplicates,
      long waiting,
      long lost) {

    void report(ChaosReport r, String prefix) {
      r.put(prefix + "PerSecond", Math.round(perSecond))
          .put(prefix + "CalibratedPerSecond", Math.round(calibratedPerSecond))
          .put(prefix + "WindowMs", window)
          .put(prefix + "WaitingAtWindowEnd", waitingAtEnd)
          .put(prefix + "Acknowledged", acknowledged)
          .put(prefix + "Handled", handled)
          .put(prefix + "Waiting", waiting)
          .put(prefix + "Lost", lost)
          .put(prefix + "Duplicates", duplicates);
    }
  }

  private static void check(Run run) {
    assertThat(run.perSecond()).as("rate").isPositive();
    assertThat(run.waitingAtEnd()).as("the backlog lasted the window").isPositive();
    assertThat(run.lost()).as("lost").isZero();
    assertThat(run.duplicates()).as("duplicates").isZero();
    assertThat(run.handled() + run.waiting())
        .as("delivered + still waiting")
        .isEqualTo(run.acknowledged());
  }

  /** Deliveries per second that {@code processes} JVMs of {@code kind} reach on a backlog. */
  private static Run rate(String kind, int processes) throws Exception {
    Ledger ledger = Ledger.install(admin);
    try (Connection c = admin.getConnection()) {
      c.createStatement()
          .execute(
              "CREATE TABLE IF NOT EXISTS chaos.handoffs (message_id bigint NOT NULL, token uuid"
                  + " NOT NULL, confirmed boolean NOT NULL DEFAULT false);"
                  + " TRUNCATE chaos.acknowledged, chaos.ledger, chaos.marks, chaos.handoffs,"
                  + " commandqueue.commands, balancer.messages,"
                  + " eventstream.handler_checkpoints, eventstream.events, eventstream.streams"
                  + " CASCADE");
    }
    AtomicInteger preloaded = new AtomicInteger();
    int warmUp = WARM_UP * processes;
    feed(kind, ledger, preloaded, warmUp);
    List<NodeProcess> nodes = new ArrayList<>();
    try {
      for (int i = 1; i <= processes; i++) {
        nodes.add(
            NodeProcess.of(
                    "scale-" + kind + "-" + i,
                    Path.of("target", "deployment", "nodes"),
                    NodeMain.class,
                    kind,
                    Cluster.multiHostUrl(),
                    Cluster.USER,
                    Cluster.PASSWORD,
                    "scale-" + kind + "-" + i,
                    Integer.toString(WORKERS))
                .start());
        // One JVM at a time: several cold JVMs starting at once on two loaded cores missed
        // NodeMain's 5 s connection timeout. Even one at a time, a cold JVM next to running ones
        // may miss it on its first connection (NodeMain then exits): it is started again, up to
        // three times. Start-up is not what is measured.
        int started = i;
        NodeProcess node = nodes.get(i - 1);
        await()
            .atMost(Duration.ofSeconds(240))
            .pollInterval(Duration.ofMillis(500))
            .until(
                () -> {
                  feed(kind, ledger, preloaded, warmUp);
                  boolean ready =
                      ledger.queryLong(
                              "SELECT count(*) FROM chaos.marks WHERE label LIKE 'ready:%'")
                          == started;
                  if (!ready && !node.isAlive() && node.starts() < 3) {
                    node.start();
                  }
                  return ready;
                });
      }
      // Each JVM warms up (class loading, JIT) on the same backlog before anything is timed: on
      // two shared cores a cold JVM takes seconds to reach its speed.
      await()
          .atMost(Duration.ofSeconds(180))
          .pollInterval(Duration.ofMillis(500))
          .until(
              () -> {
                feed(kind, ledger, preloaded, warmUp);
                return ledger.queryLong(
                        "SELECT count(*) FROM (SELECT node FROM chaos.ledger GROUP BY node"
                            + " HAVING count(*) >= 300) warm")
                    == processes;
              });
      // The machine's rate, measured while work waits throughout: it sizes the window, and the
      // backlog is topped up (the processes keep draining meanwhile) and measured again until what
      // waits lasts the next calibration and the window MARGIN times over at the rate just seen.
      double calibrated;
      Duration window;
      for (int round = 1; ; round++) {
        long a = ledger.rows();
        long t0 = System.nanoTime();
        Cluster.sleep(CALIBRATION.toMillis());
        long b = ledger.rows();
        calibrated = (b - a) / ((System.nanoTime() - t0) / 1e9);
        window = window(calibrated);
        long waiting = waiting(kind, ledger);
        long needed =
            (long) Math.ceil(calibrated * (CALIBRATION.plus(window).toMillis() / 1e3) * MARGIN);
        if (waiting > 0 && waiting >= needed) {
          break;
        }
        assertThat(round).as("calibrations to size the backlog").isLessThan(MAX_ROUNDS);
        // Up to twice what is needed: the processes drain while the top-up is written and the
        // next calibration runs, so topping up to exactly what is needed falls short every round.
        // When nothing waited, the rate seen is too low: add at least the warm-up backlog again.
        int more = (int) Math.max(2 * needed - waiting, warmUp);
        preload(kind, preloaded.getAndAdd(more), more, ledger);
      }
      long a = ledger.rows();
      long t0 = System.nanoTime();
      Cluster.sleep(window.toMillis());
      long b = ledger.rows();
      double seconds = (System.nanoTime() - t0) / 1e9;
      long waitingAtEnd = waiting(kind, ledger);
      double perSecond = (b - a) / seconds;
      for (NodeProcess n : nodes) {
        n.stop(Duration.ofSeconds(15));
      }
      nodes.clear();
      // The processes are gone: every acknowledged message is in the ledger or still waiting.
      Ledger.Figures f = ledger.figures();
      long waiting = ledger.queryLong("SELECT count(*) FROM (" + waitingIds(kind) + ") w");
      long lost =
          ledger.queryLong(
              "SELECT count(*) FROM (SELECT message_id FROM chaos.acknowledged EXCEPT SELECT"
                  + " message_id FROM chaos.ledger EXCEPT "
                  + waitingIds(kind)
                  + ") lost");
      return new Run(
          perSecond,
          calibrated,
          window,
          waitingAtEnd,
          f.acknowledged(),
          f.handled(),
          f.duplicates(),
          waiting,
          lost);
    } finally {
      for (NodeProcess n : nodes) {
        n.stop(Duration.ofSeconds(15));
      }
    }
  }

  /**
   * Keeps at least half of {@code amount} waiting while the processes start and warm up (the first
   * ones drain while the next JVM starts): adds {@code amount} when less waits.
   */
  private static void feed(String kind, Ledger ledger, AtomicInteger preloaded, int amount)
      throws Exception {
    if (waiting(kind, ledger) < amount / 2) {
      preload(kind, preloaded.getAndAdd(amount), amount, ledger);
    }
  }

  /** A window holding about {@link #WINDOW_DELIVERIES} at {@code perSecond}, within the limits. */
  private static Duration window(double perSecond) {
    long ms = perSecond <= 0 ? MAX_WINDOW.toMillis() : (long) (WINDOW_DELIVERIES * 1e3 / perSecond);
    return Duration.ofMillis(Math.max(MIN_WINDOW.toMillis(), Math.min(MAX_WINDOW.toMillis(), ms)));
  }

  /** The messages of {@code kind} not delivered yet. */
  private static long waiting(String kind, Ledger ledger) {
    return ledger.queryLong("SELECT count(*) FROM (" + waitingIds(kind) + ") w");
  }

  /** The ledger ids (text) of the messages of {@code kind} not delivered yet. */
  private static String waitingIds(String kind) {
    switch (kind) {
      case "commands":
        return "SELECT message_id::text FROM commandqueue.commands";
      case "events":
        return "SELECT e.message_id::text FROM eventstream.events e LEFT JOIN"
            + " eventstream.handler_checkpoints h ON h.stream_id = e.stream_id AND h.handler_key = '"
            + NodeMain.HANDLER_KEY
            + "' WHERE e.stream_offset >= coalesce(h.checkpoint_offset, 0)";
      default:
        return "SELECT 'b' || id FROM balancer.messages";
    }
  }

  /**
   * Writes {@code count} messages of {@code kind}, numbered from {@code first}, and acknowledges
   * each in the ledger.
   */
  private static void preload(String kind, int first, int count, Ledger ledger) throws Exception {
    switch (kind) {
      case "commands":
        CommandQueue queue = CommandQueue.create(admin, Work.CODEC);
        for (int from = first; from < first + count; from += 1_000) {
          List<NewCommand> batch = new ArrayList<>();
          for (int i = from; i < Math.min(first + count, from + 1_000); i++) {
            batch.add(NewCommand.of(new Work(i)));
          }
          List<String> ids = new ArrayList<>();
          for (EnqueueResult r : queue.enqueueAll(batch)) {
            ids.add(r.messageId().toString());
          }
          ledger.acknowledge(ids);
        }
        break;
      case "events":
        EventStore store = EventStore.create(admin, Work.CODEC);
        List<String> eventIds = new ArrayList<>();
        try (Connection c = admin.getConnection()) {
          c.setAutoCommit(false);
          for (int s = 0; s < 16; s++) {
            long stream = store.createStream(Tx.of(c));
            List<Object> events = new ArrayList<>();
            for (int i = 0; i < (count + 15) / 16; i++) {
              events.add(new Work(first + i));
            }
            eventIds.addAll(store.appendTo(Tx.of(c), stream, events).messageIds());
          }
          c.commit();
        }
        ledger.acknowledge(eventIds);
        break;
      default:
        MessageBalancer group = MessageBalancer.create(admin, NodeMain.GROUP);
        List<String> messageIds = new ArrayList<>();
        try (Connection c = admin.getConnection()) {
          c.setAutoCommit(false);
          for (int i = first + 1; i <= first + count; i++) {
            // Sequence numbers that are never a multiple of HANDOFF_EVERY: every message is done
            // in its transaction (no hand-off to confirm).
            long seq = i * (long) NodeMain.HANDOFF_EVERY + 1;
            messageIds.add(
                "b"
                    + group.storeMessage(
                        c, "k" + (i % 200), ByteBuffer.allocate(8).putLong(seq).array(), null));
          }
          c.commit();
        }
        ledger.acknowledge(messageIds);
    }
  }
}
