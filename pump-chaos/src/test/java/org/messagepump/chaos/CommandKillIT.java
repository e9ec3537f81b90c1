package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandQueue;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;
import org.messagepump.testkit.chaos.ChaosReport;
import org.messagepump.testkit.chaos.Ledger;
import org.messagepump.testkit.chaos.NodeProcess;

/** Scenario 1: kill -9 one of two command-pump JVMs again and again while they drain. */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class CommandKillIT {

  @Test
  void killingPumpJvmsLosesNothingAndDuplicatesNothing(TestDatabase db) throws Exception {
    int commands = Chaos.size(5_000, 2_000);
    int kills = Chaos.size(10, 5);
    CommandQueue.migrate(db.dataSource());
    CommandQueue queue = CommandQueue.create(db.dataSource(), Work.CODEC);
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();

    List<NodeProcess> nodes = new ArrayList<>();
    for (int i = 1; i <= 2; i++) {
      nodes.add(Chaos.node(db, "commands", "cmd-node-" + i, 4).start());
    }
    // Each round's commands arrive in two halves: one just before the kill (so it hits a drain),
    // one once the victim is back (so its recovery is measured on fresh work).
    long produced = 0;
    long extraCommands = 0;
    long minPendingAtKill = Long.MAX_VALUE;
    long worstRestartRecovery = 0;
    long worstKillToNodeDelivery = 0;
    try {
      for (int k = 0; k < kills; k++) {
        long budget = (commands - produced) / (kills - k);
        long before = budget / 2;
        Chaos.enqueue(queue, ledger, produced, produced + before);
        produced += before;
        Chaos.pace(Duration.ofMillis(100));
        minPendingAtKill =
            Math.min(minPendingAtKill, db.queryLong("SELECT count(*) FROM commandqueue.commands"));
        NodeProcess victim = nodes.get(k % 2);
        Instant killedAt = ledger.mark("kill:" + victim.name());
        victim.kill();
        victim.start();
        Instant ready =
            Chaos.awaitMark(
                db.dataSource(), "ready:" + victim.name(), killedAt, Duration.ofSeconds(60));
        Chaos.enqueue(queue, ledger, produced, produced + budget - before);
        produced += budget - before;
        // Should the survivor drain everything before the victim's first poll, more work comes
        // (that only lengthens the measured recovery).
        long[] extra = {commands + extraCommands};
        org.awaitility.Awaitility.await()
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(100))
            .until(
                () -> {
                  if (ledger.recoveryAfter(ready, victim.name()).isPresent()) {
                    return true;
                  }
                  if (db.queryLong("SELECT count(*) FROM commandqueue.commands") == 0) {
                    Chaos.enqueue(queue, ledger, extra[0], extra[0] + 100);
                    extra[0] += 100;
                  }
                  return false;
                });
        extraCommands = extra[0] - commands;
        worstRestartRecovery =
            Math.max(
                worstRestartRecovery,
                ledger.recoveryAfter(ready, victim.name()).orElseThrow().toMillis());
        worstKillToNodeDelivery =
            Math.max(
                worstKillToNodeDelivery,
                ledger.recoveryAfter(killedAt, victim.name()).orElseThrow().toMillis());
      }
      if (produced < commands) {
        Chaos.enqueue(queue, ledger, produced, commands);
      }
      Chaos.awaitHandled(ledger, commands, Duration.ofSeconds(120));
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> db.queryLong("SELECT count(*) FROM commandqueue.commands") == 0);
    } finally {
      for (NodeProcess n : nodes) {
        n.stop(Duration.ofSeconds(15));
      }
    }

    Ledger.Figures f = ledger.figures();
    long kills9 = nodes.stream().mapToInt(NodeProcess::starts).sum() - 2;
    ChaosReport.of("1-commands-kill9")
        .put("commands", commands + extraCommands)
        .put("kills", kills9)
        .put("workers", "2x4")
        .put(f)
        .put("worstRecoveryAfterRestartMs", worstRestartRecovery)
        .put("worstKillToNodeDeliveryMs", worstKillToNodeDelivery)
        .put("minPendingAtKill", minPendingAtKill)
        .write();
    assertThat(kills9).isEqualTo(kills);
    assertThat(f.acknowledged()).isEqualTo(commands + extraCommands);
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isZero();
    assertThat(worstRestartRecovery).as("recovery after restart (ms)").isLessThanOrEqualTo(2_000);
  }
}
