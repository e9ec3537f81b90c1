package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.BackendTerminator;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 2: {@code pg_terminate_backend} on every pump connection every 300 ms during a drain:
 * nothing lost or duplicated, the pumps stay alive and their pools are healthy afterwards.
 */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class TerminateBackendsIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  @Test
  void terminatingEveryPumpBackendLosesNothing(TestDatabase db) {
    int commands = Chaos.size(20_000, 5_000);
    Duration faultWindow = Duration.ofSeconds(Chaos.size(30, 8));
    CommandQueue queue = COMMANDS.queue();
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();
    for (int i = 0; i < commands; i += 1_000) {
      Chaos.enqueue(queue, ledger, i, Math.min(commands, i + 1_000));
    }

    List<HikariDataSource> pools = new ArrayList<>();
    List<MessagePump> pumps = new ArrayList<>();
    BackendTerminator terminator = new BackendTerminator(db.server(), db.name(), "term-node-%");
    long handledInWindow;
    Instant lastFault;
    try {
      for (int i = 1; i <= 2; i++) {
        HikariDataSource pool = db.newDataSource("term-node-" + i, 8);
        pools.add(pool);
        MessagePump p =
            Chaos.recordingPump(pool, queue, "term-node-" + i, 4, MessagePump.UNLIMITED_FAILURES);
        pumps.add(p);
        p.start();
      }
      Instant start = ledger.mark("faults-start");
      terminator.every(Duration.ofMillis(300));
      Chaos.pace(faultWindow);
      terminator.stop();
      lastFault = ledger.mark("faults-end");
      handledInWindow =
          ledger.queryLong(
              "SELECT count(*) FROM chaos.ledger WHERE handled_at BETWEEN '"
                  + start
                  + "' AND '"
                  + lastFault
                  + "'");
      // Fresh work after the faults must flow too: the pumps are alive.
      Chaos.enqueue(queue, ledger, commands, commands + 100);
      Chaos.awaitHandled(ledger, commands + 100, Duration.ofSeconds(180));
      for (MessagePump p : pumps) {
        assertThat(p.isRunning()).as(p.name() + " running").isTrue();
      }
      for (HikariDataSource pool : pools) {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> pool.getHikariPoolMXBean().getActiveConnections() <= 1);
        try (Connection c = pool.getConnection();
            Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT 1")) {
          assertThat(rs.next()).isTrue();
        }
      }
    } catch (java.sql.SQLException e) {
      throw new AssertionError("a pool is broken after the faults", e);
    } finally {
      terminator.stop();
      pumps.forEach(MessagePump::close);
    }
    long idleInTx =
        db.queryLong(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'term-node-%'"
                + " AND state LIKE 'idle in transaction%'");

    Ledger.Figures f = ledger.figures();
    ChaosReport.of("2-terminate-backends")
        .put("commands", commands + 100)
        .put("faultWindowMs", faultWindow)
        .put("terminationRounds", terminator.rounds())
        .put("backendsTerminated", terminator.terminated())
        .put("handledDuringFaults", handledInWindow)
        .put(f)
        .put("recoveryAfterLastFaultMs", ledger.recoveryAfter(lastFault, null).orElseThrow())
        .write();
    assertThat(terminator.terminated()).as("backends terminated").isGreaterThan(20);
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(idleInTx).as("backends left idle in transaction").isZero();
  }
}
