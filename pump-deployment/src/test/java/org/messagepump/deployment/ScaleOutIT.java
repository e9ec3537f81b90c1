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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.messagepump.balancer.Balancer;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.chaos.NodeMain;
import org.messagepump.chaos.Work;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.NodeProcess;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.Tx;
import org.messagepump.eventstream.EventStore;

/**
 * Pump processes scale out with no coordination but the database: N pump JVMs (pump-chaos's
 * NodeMain, 4 workers each) drain a backlog on the primary of the formation (synchronous standby),
 * and the rate each N reaches is measured from the ledger. The primary's write rate is the ceiling.
 */
class ScaleOutIT {

  private static final int WORKERS = 4;
  private static final Duration WINDOW = Duration.ofSeconds(10);
  private static HikariDataSource admin;

  @BeforeAll
  static void startCluster() {
    Cluster.start();
    Cluster.run("wait-healthy", "300");
    Cluster.run("sync", "on");
    admin = Cluster.pool(Cluster.multiHostUrl(), "admin-scale", 4);
    CommandQueue.migrate(admin);
    EventStore.migrate(admin);
    Balancer.migrate(admin);
  }

  @AfterAll
  static void close() {
    if (admin != null) {
      admin.close();
    }
  }

  @Test
  void commandPumpProcessesScaleOutUpToThePrimarysWriteRate() throws Exception {
    Map<Integer, Double> rates = new LinkedHashMap<>();
    for (int n : new int[] {1, 2, 4}) {
      rates.put(n, rate("commands", n));
    }
    ChaosReport r = ChaosReport.of("scale-out-commands").put("workersPerProcess", WORKERS);
    rates.forEach((n, rate) -> r.put("processes" + n + "PerSecond", Math.round(rate)));
    r.write();
    rates.values().forEach(rate -> assertThat(rate).isPositive());
  }

  @Test
  void eventAndBalancerProcessesAtTwo() throws Exception {
    double events = rate("events", 2);
    double balancer = rate("balancer", 2);
    ChaosReport.of("scale-out-events-balancer")
        .put("workersPerProcess", WORKERS)
        .put("eventsProcesses2PerSecond", Math.round(events))
        .put("balancerProcesses2PerSecond", Math.round(balancer))
        .write();
    assertThat(events).isPositive();
    assertThat(balancer).isPositive();
  }

  /** Deliveries per second that {@code processes} JVMs of {@code kind} reach on a backlog. */
  private static double rate(String kind, int processes) throws Exception {
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
    int backlog = 15_000 * processes;
    preload(kind, backlog);
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
        // NodeMain's 5 s connection timeout.
        int started = i;
        await()
            .atMost(Duration.ofSeconds(120))
            .until(
                () ->
                    ledger.queryLong("SELECT count(*) FROM chaos.marks WHERE label LIKE 'ready:%'")
                        == started);
      }
      // Each JVM warms up (class loading, JIT) on the same backlog before anything is timed: on
      // two shared cores a cold JVM takes seconds to reach its speed.
      await()
          .atMost(Duration.ofSeconds(180))
          .pollInterval(Duration.ofMillis(500))
          .until(
              () ->
                  ledger.queryLong(
                          "SELECT count(*) FROM (SELECT node FROM chaos.ledger GROUP BY node"
                              + " HAVING count(*) >= 300) warm")
                      == processes);
      Cluster.sleep(2_000);
      long a = ledger.rows();
      long t0 = System.nanoTime();
      Cluster.sleep(WINDOW.toMillis());
      long b = ledger.rows();
      double seconds = (System.nanoTime() - t0) / 1e9;
      assertThat(b).as("the backlog lasted the window").isLessThan(backlog);
      return (b - a) / seconds;
    } finally {
      for (NodeProcess n : nodes) {
        n.stop(Duration.ofSeconds(15));
      }
    }
  }

  private static void preload(String kind, int count) throws Exception {
    switch (kind) {
      case "commands":
        CommandQueue queue = CommandQueue.create(admin, Work.CODEC);
        for (int from = 0; from < count; from += 1_000) {
          List<NewCommand> batch = new ArrayList<>();
          for (int i = from; i < from + 1_000; i++) {
            batch.add(NewCommand.of(new Work(i)));
          }
          queue.enqueueAll(batch);
        }
        break;
      case "events":
        EventStore store = EventStore.create(admin, Work.CODEC);
        try (Connection c = admin.getConnection()) {
          c.setAutoCommit(false);
          for (int s = 0; s < 16; s++) {
            long stream = store.createStream(Tx.of(c));
            List<Object> events = new ArrayList<>();
            for (int i = 0; i < count / 16; i++) {
              events.add(new Work(i));
            }
            store.appendTo(Tx.of(c), stream, events);
          }
          c.commit();
        }
        break;
      default:
        MessageBalancer group = MessageBalancer.create(admin, NodeMain.GROUP);
        try (Connection c = admin.getConnection()) {
          c.setAutoCommit(false);
          for (int i = 1; i <= count; i++) {
            // Sequence numbers that are never a multiple of HANDOFF_EVERY: every message is done
            // in its transaction (no hand-off to confirm).
            long seq = i * (long) NodeMain.HANDOFF_EVERY + 1;
            group.storeMessage(
                c, "k" + (i % 200), ByteBuffer.allocate(8).putLong(seq).array(), null);
          }
          c.commit();
        }
    }
  }
}
