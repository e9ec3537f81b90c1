package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.NodeProcess;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Scenario 1: kill -9 one of two command-pump JVMs again and again while they drain. */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class CommandKillIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  @Test
  void killingPumpJvmsLosesNothingAndDuplicatesNothing(TestDatabase db) {
    int commands = Chaos.size(5_000, 1_600);
    int kills = Chaos.size(10, 4);
    CommandQueue queue = COMMANDS.queue();
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();

    List<NodeProcess> nodes = new ArrayList<>();
    KillLoop.Stats stats;
    try {
      for (int i = 1; i <= 2; i++) {
        nodes.add(Chaos.node(db, "commands", "cmd-node-" + i, 4).start());
      }
      stats =
          KillLoop.run(
              db,
              ledger,
              nodes,
              kills,
              commands,
              (from, to) -> Chaos.enqueue(queue, ledger, from, to),
              "SELECT count(*) FROM commandqueue.commands");
      Chaos.awaitHandled(ledger, stats.produced(), Duration.ofSeconds(120));
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> db.queryLong("SELECT count(*) FROM commandqueue.commands") == 0);
    } finally {
      for (NodeProcess n : nodes) {
        n.stop(Duration.ofSeconds(15));
      }
    }

    Ledger.Figures f = ledger.figures();
    ChaosReport.of("1-commands-kill9")
        .put("commands", stats.produced())
        .put("kills", stats.kills())
        .put("workers", "2x4")
        .put(f)
        .put("worstRecoveryAfterRestartMs", stats.worstRecoveryAfterRestartMs())
        .put("worstKillToNodeDeliveryMs", stats.worstKillToNodeDeliveryMs())
        .put("minPendingAtKill", stats.minPendingAtKill())
        .write();
    assertThat(nodes.stream().mapToInt(NodeProcess::starts).sum() - 2).isEqualTo(kills);
    assertThat(f.acknowledged()).isEqualTo(stats.produced());
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isZero();
    assertThat(stats.worstRecoveryAfterRestartMs())
        .as("recovery after restart (ms)")
        .isLessThanOrEqualTo(Chaos.recoveryBoundMs());
  }
}
