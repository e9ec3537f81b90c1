package org.messagepump.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;

/**
 * Two pump processes (each a command pump, an event handler and a balancer pump) connected through
 * pgjdbc's multi-host URL ({@code targetServerType=primary}) drain what a producer writes while the
 * primary fails: (a) its postmaster is killed with {@code kill -9}; (a') the whole node (keeper and
 * postmaster) is killed, so the monitor promotes the standby; (b) a controlled switchover. Each
 * loses nothing acknowledged, delivers nothing twice and leaves no transaction idle.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FailoverIT {

  private static final int PROCESSES = 2;
  private static final int WORKERS = 2;
  private static HikariDataSource admin;

  @BeforeAll
  static void startCluster() {
    Cluster.start();
    Cluster.run("sync", "on");
    admin = Cluster.pool(Cluster.multiHostUrl(), "admin-deploy", 6);
  }

  @AfterAll
  static void closeAdmin() {
    if (admin != null) {
      admin.close();
    }
  }

  @Test
  @Order(1)
  void killNineOfThePrimaryPostmaster() throws Exception {
    scenario("ha-a-kill9-postmaster", "kill-postmaster", false);
  }

  @Test
  @Order(2)
  void controlledSwitchover() throws Exception {
    scenario("ha-b-switchover", "switchover", true);
  }

  @Test
  @Order(3)
  void killNineOfThePrimaryNodeFailsOverToTheStandby() throws Exception {
    scenario("ha-a2-kill9-node", "kill-node", true);
  }

  /**
   * Runs one fault under load. {@code otherNode}: the new primary must be the other node (a
   * promotion), not the same one restarted.
   */
  private void scenario(String name, String fault, boolean otherNode) throws Exception {
    Cluster.run("wait-healthy", "180");
    int before = Cluster.primaryPort();
    Workload w = new Workload(admin);
    Ledger ledger = w.ledger();
    AtomicLong worstIdleInTx = new AtomicLong();
    AtomicBoolean sampling = new AtomicBoolean(true);
    Instant fault0;
    Instant promoted;
    String killed = null;
    try {
      w.startPumps(Cluster.multiHostUrl(), PROCESSES, WORKERS, b -> b);
      w.startProducing(3, 25);
      await().atMost(Duration.ofSeconds(60)).until(() -> ledger.rows() >= 300);

      fault0 = Instant.now();
      killed = faultAsync(fault);
      promoted =
          Cluster.awaitPrimary(Duration.ofMinutes(3).toMillis(), otherNode ? before : /* any */ -1);
      assertThat(promoted).as("a primary answers again").isNotNull();
      int after = Cluster.primaryPort();
      Thread sampler =
          new Thread(
              () -> {
                while (sampling.get()) {
                  try {
                    worstIdleInTx.accumulateAndGet(w.longestIdleInTransactionMillis(), Math::max);
                  } catch (RuntimeException e) {
                    // the primary is still settling: next sample
                  }
                  Cluster.sleep(250);
                }
              },
              "deploy-idle-sampler");
      sampler.start();
      Cluster.sleep(8_000); // keep producing on the new primary
      long acknowledged = w.stopProducing();
      await()
          .atMost(Duration.ofMinutes(3))
          .pollInterval(Duration.ofMillis(250))
          .ignoreExceptions()
          .until(() -> w.pending() == 0 && ledger.figures().handled() >= acknowledged);
      Cluster.sleep(1_000);
      long idleNow = w.longestIdleInTransactionMillis();
      sampling.set(false);
      sampler.join(5_000);

      Ledger.Figures f = ledger.figures();
      ChaosReport report =
          ChaosReport.of(name)
              .put("fault", fault)
              .put("killed", killed)
              .put("primaryBefore", before)
              .put("primaryAfter", after)
              .put("processes", PROCESSES)
              .put("workersPerPump", WORKERS)
              .put("faultToPrimaryMs", Duration.between(fault0, promoted))
              .put(f)
              .put("orderViolations", ledger.orderViolations())
              .put("failedWrites", w.failedWrites())
              .put("producerRounds", w.rounds())
              .put("slowestProducerRoundMs", w.slowestRoundMillis())
              .put("worstIdleInTransactionMs", worstIdleInTx.get())
              .put("idleInTransactionAtEndMs", idleNow);
      for (String kind : Workload.KINDS) {
        report.put(
            "promotionToFirstDeliveryMs." + kind,
            w.firstDeliveryAfter(kind, promoted).map(Duration::toMillis).orElse(-1L));
      }
      report.write();

      assertThat(f.acknowledged()).isEqualTo(acknowledged);
      assertThat(f.lost()).as("lost").isZero();
      assertThat(f.duplicates()).as("duplicates").isZero();
      assertThat(ledger.orderViolations()).as("order violations").isZero();
      // A transaction between two statements is idle for a moment: nothing may stay so.
      assertThat(idleNow).as("idle in transaction at the end (ms)").isLessThan(1_000);
      assertThat(worstIdleInTx.get()).as("longest idle in transaction (ms)").isLessThan(5_000);
      if (otherNode) {
        assertThat(after).as("the standby was promoted").isNotEqualTo(before);
      }
      for (String kind : Workload.KINDS) {
        assertThat(w.firstDeliveryAfter(kind, promoted)).as(kind + " delivers again").isPresent();
      }
    } finally {
      sampling.set(false);
      w.close();
      if ("kill-node".equals(fault) && killed != null) {
        // Bring the lost node back: it rejoins as the standby (pg_rewind if needed).
        Cluster.run("restart-node", killed.substring("node".length()));
        Cluster.run("wait-healthy", "300");
      }
    }
  }

  /** Starts the fault; returns the node name it hit. A switchover runs in the background. */
  private static String faultAsync(String fault) {
    if ("switchover".equals(fault)) {
      String primary = Cluster.primaryPort() == Cluster.NODE1 ? "node1" : "node2";
      Thread t = new Thread(() -> Cluster.run("switchover"), "deploy-switchover");
      t.setDaemon(true);
      t.start();
      return primary;
    }
    return Cluster.run(fault);
  }
}
