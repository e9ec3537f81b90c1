package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.ServerControl;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 3: the PostgreSQL server is stopped (immediate) mid-drain and started again on the same
 * data directory and port 5 s later. This class runs in a JVM (and so with a server) of its own.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class ServerRestartIT {

  private static final Duration BACKOFF_CAP = Duration.ofSeconds(2);
  private static final Duration POOL_TIMEOUT = Duration.ofSeconds(1);

  @Test
  void anImmediateServerRestartLosesNothing(TestDatabase db) {
    int commands = Chaos.size(10_000, 3_000);
    CommandQueue.migrate(db.dataSource());
    CommandQueue queue = CommandQueue.create(db.dataSource(), Work.CODEC);
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();
    for (int i = 0; i < commands; i += 1_000) {
      Chaos.enqueue(queue, ledger, i, Math.min(commands, i + 1_000));
    }
    ServerControl server = ServerControl.of(db.server());
    System.out.println("chaos: server command " + server.command());
    List<MessagePump> pumps = new ArrayList<>();
    Instant back;
    long handledBefore;
    try {
      for (int i = 1; i <= 2; i++) {
        // A short connection timeout: HikariCP's reconnect backoff is up to half of it.
        HikariDataSource pool = db.newDataSource("restart-node-" + i, 8, POOL_TIMEOUT);
        MessagePump p =
            MessagePump.builder(pool)
                .name("restart-node-" + i)
                .driver(
                    queue.driver(
                        org.messagepump.commands.CommandHandlers.builder()
                            .on(Work.class, recorder("restart-node-" + i))
                            .build()))
                .workers(4)
                .pollInterval(Duration.ofMillis(100))
                .backoff(Duration.ofMillis(50), BACKOFF_CAP)
                .build();
        pumps.add(p);
        p.start();
      }
      Chaos.awaitHandled(ledger, commands / 5, Duration.ofSeconds(120));
      handledBefore = ledger.figures().handled();
      server.stop(ServerControl.StopMode.IMMEDIATE, Duration.ofSeconds(30));
      Chaos.pace(Duration.ofSeconds(5));
      server.start(Duration.ofSeconds(60));
      back = ledger.mark("server-back");
      Chaos.awaitHandled(ledger, commands, Duration.ofSeconds(180));
      for (MessagePump p : pumps) {
        assertThat(p.isRunning()).isTrue();
      }
    } finally {
      pumps.forEach(MessagePump::close);
    }
    Ledger.Figures f = ledger.figures();
    Duration recovery = ledger.recoveryAfter(back, null).orElseThrow();
    ChaosReport.of("3-server-restart-immediate")
        .put("commands", commands)
        .put("handledBeforeStop", handledBefore)
        .put("downMs", 5_000)
        .put("backoffCapMs", BACKOFF_CAP)
        .put(f)
        .put("recoveryAfterServerBackMs", recovery)
        .write();
    assertThat(handledBefore).as("the stop hit a drain").isLessThan(commands);
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(recovery).as("recovery after the server is back").isLessThanOrEqualTo(BACKOFF_CAP);
  }

  private static org.messagepump.commands.CommandHandler<Work> recorder(String node) {
    return (w, ctx) ->
        Ledger.record(ctx.tx().connection(), ctx.messageId().toString(), ctx.attempt(), node);
  }
}
