package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.FaultInjectingDataSource;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 8: every 7th statement fails with 40001, 40P01, 55P03 or 08006 in turn (08006 also
 * closes the real connection). With maxFailures 1 any fault surfacing as a handler failure would
 * park its command; none may. All handled once, no leaked connections.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class InjectedFaultsIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  @Test
  void injectedSqlStatesNeverSurface(TestDatabase db) {
    int commands = Chaos.size(5_000, 1_000);
    CommandQueue queue = COMMANDS.queue();
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();
    for (int i = 0; i < commands; i += 1_000) {
      Chaos.enqueue(queue, ledger, i, Math.min(commands, i + 1_000));
    }
    HikariDataSource pool = db.newDataSource("faulty", 8);
    FaultInjectingDataSource faults =
        FaultInjectingDataSource.wrap(pool, 7, List.of("40001", "40P01", "55P03", "08006"));
    CommandQueue faultyQueue = CommandQueue.create(faults.dataSource(), Work.CODEC);
    MessagePump pump = Chaos.recordingPump(faults.dataSource(), faultyQueue, "faulty", 4, 1);
    pump.start();
    long active;
    try {
      await()
          .atMost(Duration.ofSeconds(240))
          .pollInterval(Duration.ofMillis(200))
          .until(
              () ->
                  db.queryLong(
                              "SELECT (SELECT count(*) FROM commandqueue.commands)"
                                  + " + (SELECT count(*) FROM commandqueue.dead_letters)")
                          == 0
                      || db.queryLong("SELECT count(*) FROM commandqueue.dead_letters") > 0);
      faults.enabled(false);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> pool.getHikariPoolMXBean().getActiveConnections() <= 1);
      active = pool.getHikariPoolMXBean().getActiveConnections();
    } finally {
      pump.close();
    }
    long idleInTx =
        db.queryLong(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'faulty'"
                + " AND state LIKE 'idle in transaction%'");
    long parked = db.queryLong("SELECT count(*) FROM commandqueue.dead_letters");
    Ledger.Figures f = ledger.figures();
    ChaosReport.of("8-injected-sqlstates")
        .put("commands", commands)
        .put("every", 7)
        .put("statements", faults.executions())
        .put("injected", faults.injected().toString())
        .put(f)
        .put("parked", parked)
        .put("activeConnectionsAfter", active)
        .put("poolTotalAfter", pool.getHikariPoolMXBean().getTotalConnections())
        .put("idleInTransaction", idleInTx)
        .write();
    assertThat(faults.injected()).containsKeys("40001", "40P01", "55P03", "08006");
    assertThat(parked).as("faults surfaced as handler failures (parked)").isZero();
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(active)
        .as("connections still borrowed (the listener's aside)")
        .isLessThanOrEqualTo(1);
    assertThat(idleInTx).as("backends left idle in transaction").isZero();
  }
}
