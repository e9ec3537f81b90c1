package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.NodeProcess;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 9 (balancer): kill -9 one of two balancer JVMs again and again while messages of 10 keys
 * arrive; every fifth message is handed off downstream and confirmed by the test. One JVM takes
 * runs (messagesPerTurn 5, batches of 10), so a kill can land in the middle of a run. Per-key order
 * is kept and no message (hand-off included) is delivered twice.
 */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class BalancerKillIT {

  private static final int KEYS = 10;

  @RegisterExtension
  static final BalancerFixture BALANCER =
      BalancerFixture.create()
          .table(
              "chaos.handoffs",
              "CREATE SCHEMA IF NOT EXISTS chaos; CREATE TABLE chaos.handoffs (message_id bigint"
                  + " NOT NULL, token uuid NOT NULL, confirmed boolean NOT NULL DEFAULT false)");

  @Test
  void killingBalancerJvmsKeepsKeyOrderAndNeverHandsOffTwice(TestDatabase db) throws Exception {
    int messages = Chaos.size(5_000, 1_200);
    int kills = Chaos.size(10, 3);
    MessageBalancer group = BALANCER.group(NodeMain.GROUP);
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();

    AtomicBoolean confirming = new AtomicBoolean(true);
    AtomicLong staleConfirms = new AtomicLong();
    Thread confirmer =
        new Thread(() -> confirmLoop(db, confirming, staleConfirms), "chaos-confirmer");
    confirmer.start();
    List<NodeProcess> nodes = new ArrayList<>();
    KillLoop.Stats stats;
    try {
      // One node takes one message per key per batch, the other runs of up to 5 in batches of 10.
      nodes.add(Chaos.node(db, "balancer", "bal-node-1", 4).start());
      nodes.add(Chaos.node(db, "balancer-runs", "bal-node-2", 4).start());
      stats =
          KillLoop.run(
              db,
              ledger,
              nodes,
              kills,
              messages,
              (from, to) -> store(db, group, ledger, from, to),
              "SELECT count(*) FROM balancer.messages");
      Chaos.awaitHandled(ledger, stats.produced(), Duration.ofSeconds(120));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.queryLong("SELECT count(*) FROM balancer.messages") == 0);
    } finally {
      confirming.set(false);
      confirmer.join(10_000);
      for (NodeProcess n : nodes) {
        n.stop(Duration.ofSeconds(15));
      }
    }

    Ledger.Figures f = ledger.figures();
    long orderViolations = ledger.orderViolations();
    long handoffs = db.queryLong("SELECT count(*) FROM chaos.handoffs");
    long handedOffTwice =
        db.queryLong("SELECT count(*) - count(DISTINCT message_id) FROM chaos.handoffs");
    ChaosReport.of("9-balancer-kill9")
        .put("messages", stats.produced())
        .put("keys", KEYS)
        .put("kills", stats.kills())
        .put("workers", "2x4")
        .put(f)
        .put("orderViolations", orderViolations)
        .put("handoffs", handoffs)
        .put("handedOffTwice", handedOffTwice)
        .put("staleConfirms", staleConfirms.get())
        .put("worstRecoveryAfterRestartMs", stats.worstRecoveryAfterRestartMs())
        .put("worstKillToNodeDeliveryMs", stats.worstKillToNodeDeliveryMs())
        .put("minPendingAtKill", stats.minPendingAtKill())
        .write();
    assertThat(f.acknowledged()).isEqualTo(stats.produced());
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(orderViolations).as("order violations within a key").isZero();
    assertThat(handoffs).isEqualTo(stats.produced() / NodeMain.HANDOFF_EVERY);
    assertThat(handedOffTwice).as("hand-offs made twice").isZero();
    assertThat(staleConfirms.get()).as("confirms rejected as stale").isZero();
    assertThat(stats.worstRecoveryAfterRestartMs())
        .as("recovery after restart (ms)")
        .isLessThanOrEqualTo(Chaos.recoveryBoundMs());
  }

  /** Stores messages {@code from..to-1} (content: the sequence number) in one transaction. */
  private static void store(
      TestDatabase db, MessageBalancer group, Ledger ledger, long from, long to) {
    List<String> ids = new ArrayList<>();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      for (long i = from; i < to; i++) {
        byte[] content = ByteBuffer.allocate(8).putLong(i).array();
        ids.add("b" + group.storeMessage(c, "k" + (i % KEYS), content, null));
      }
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    ledger.acknowledge(ids);
  }

  /** Confirms every recorded hand-off, as the downstream consumer would. */
  private static void confirmLoop(TestDatabase db, AtomicBoolean running, AtomicLong stale) {
    while (running.get()) {
      try (Connection c = db.dataSource().getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "SELECT message_id, token FROM chaos.handoffs WHERE NOT confirmed");
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long id = rs.getLong(1);
          UUID token = (UUID) rs.getObject(2);
          LeaseResult r = BalancerOperations.of(db.dataSource()).confirm(id, token);
          if (r != LeaseResult.APPLIED) {
            stale.incrementAndGet();
          }
          try (PreparedStatement u =
              c.prepareStatement("UPDATE chaos.handoffs SET confirmed = true WHERE token = ?")) {
            u.setObject(1, token);
            u.executeUpdate();
          }
        }
      } catch (SQLException | RuntimeException e) {
        // next round
      }
      Chaos.pace(Duration.ofMillis(50));
    }
  }
}
