package org.messagepump.chaos;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.NodeProcess;
import org.messagepump.testkit.TestDatabase;

/**
 * Kills one of the node JVMs with SIGKILL round after round while work keeps arriving, restarts it,
 * and measures (database clock) how soon the restarted node delivers again.
 */
final class KillLoop {

  /** Produces work items {@code [from, to)} and acknowledges them in the ledger after commit. */
  interface Producer {
    void produce(long from, long to);
  }

  /** What a kill loop measured. */
  record Stats(
      int kills,
      long produced,
      long worstRecoveryAfterRestartMs,
      long worstKillToNodeDeliveryMs,
      long minPendingAtKill) {}

  private KillLoop() {}

  /**
   * Runs {@code kills} rounds over {@code nodes} (alternating victims), producing {@code total}
   * items in all: half of each round's share just before the kill (so the kill hits a drain), the
   * rest once the victim's pump is up again. {@code pendingSql} counts the work not yet done.
   */
  static Stats run(
      TestDatabase db,
      Ledger ledger,
      List<NodeProcess> nodes,
      int kills,
      long total,
      Producer producer,
      String pendingSql) {
    long produced = 0;
    long extra = total;
    long worstRestart = 0;
    long worstKill = 0;
    long minPending = Long.MAX_VALUE;
    for (int k = 0; k < kills; k++) {
      long budget = (total - produced) / (kills - k);
      long before = budget / 2;
      producer.produce(produced, produced + before);
      produced += before;
      Chaos.pace(Duration.ofMillis(100));
      minPending = Math.min(minPending, db.queryLong(pendingSql));
      NodeProcess victim = nodes.get(k % nodes.size());
      Instant killedAt = ledger.mark("kill:" + victim.name());
      victim.kill();
      victim.start();
      Instant ready =
          Chaos.awaitMark(
              db.dataSource(), "ready:" + victim.name(), killedAt, Duration.ofSeconds(90));
      producer.produce(produced, produced + budget - before);
      produced += budget - before;
      // Should the survivors drain everything before the victim's first poll, more work comes
      // (that only lengthens the measured recovery).
      long[] next = {extra};
      await()
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(100))
          .until(
              () -> {
                if (ledger.recoveryAfter(ready, victim.name()).isPresent()) {
                  return true;
                }
                if (db.queryLong(pendingSql) == 0) {
                  producer.produce(next[0], next[0] + 50);
                  next[0] += 50;
                }
                return false;
              });
      extra = next[0];
      worstRestart =
          Math.max(
              worstRestart, ledger.recoveryAfter(ready, victim.name()).orElseThrow().toMillis());
      worstKill =
          Math.max(
              worstKill, ledger.recoveryAfter(killedAt, victim.name()).orElseThrow().toMillis());
    }
    if (produced < total) {
      producer.produce(produced, total);
    }
    return new Stats(kills, extra, worstRestart, worstKill, minPending);
  }
}
