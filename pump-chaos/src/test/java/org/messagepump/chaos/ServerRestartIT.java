package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.ServerControl;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 3: the PostgreSQL server is stopped (immediate) mid-drain and started again on the same
 * data directory and port 5 s later. This class runs in a JVM (and so with a server) of its own.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class ServerRestartIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  private static final Duration BACKOFF_CAP = Duration.ofSeconds(2);
  private static final Duration POOL_TIMEOUT = Duration.ofSeconds(1);

  /**
   * HikariCP's own retry while it cannot connect: it tries again after 10 ms, doubling up to this
   * cap, and only while a thread waits in {@code getConnection()}. After 5 s down its retry may be
   * asleep for up to this long when the server comes back.
   */
  private static final Duration POOL_RETRY_CAP = Duration.ofSeconds(5);

  /**
   * The first delivery after the server is back: within the pool's retry sleep (its next attempt
   * connects) and then the pump's backoff (if no poll was waiting for a connection when that sleep
   * ended, the pool gave up, and the next poll, at most one backoff cap later, connects at once),
   * plus one second to connect, acquire, handle and commit on a loaded machine. A pump that stopped
   * retrying, or whose backoff outgrew its cap, misses it.
   */
  private static final Duration RECOVERY_BOUND =
      POOL_RETRY_CAP.plus(BACKOFF_CAP).plus(Duration.ofSeconds(1));

  @Test
  void anImmediateServerRestartLosesNothing(TestDatabase db) {
    int commands = Chaos.size(10_000, 3_000);
    CommandQueue queue = COMMANDS.queue();
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();
    for (int i = 0; i < commands; i += 1_000) {
      Chaos.enqueue(queue, ledger, i, Math.min(commands, i + 1_000));
    }
    ServerControl server = ServerControl.of(db.server());
    System.out.println("chaos: server command " + server.command());
    List<MessagePump> pumps = new ArrayList<>();
    List<FirstConnection> pools = new ArrayList<>();
    Instant back;
    long backNanos;
    long handledBefore;
    try {
      for (int i = 1; i <= 2; i++) {
        // A short connection timeout: a poll waits at most 1 s for a connection, then backs off.
        HikariDataSource hikari = db.newDataSource("restart-node-" + i, 8, POOL_TIMEOUT);
        FirstConnection pool = new FirstConnection(hikari);
        pools.add(pool);
        MessagePump p =
            MessagePump.builder(pool.dataSource())
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
      pools.forEach(FirstConnection::arm);
      server.start(Duration.ofSeconds(60));
      backNanos = System.nanoTime();
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
    ChaosReport report = ChaosReport.of("3-server-restart-immediate");
    for (int i = 0; i < pools.size(); i++) {
      report.put(
          "pool" + (i + 1) + "FirstConnectionAfterServerBackMs", pools.get(i).after(backNanos));
    }
    report
        .put("commands", commands)
        .put("handledBeforeStop", handledBefore)
        .put("downMs", 5_000)
        .put("backoffCapMs", BACKOFF_CAP)
        .put("recoveryBoundMs", RECOVERY_BOUND)
        .put(f)
        .put("recoveryAfterServerBackMs", recovery)
        .write();
    assertThat(handledBefore).as("the stop hit a drain").isLessThan(commands);
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(recovery)
        .as("recovery after the server is back")
        .isLessThanOrEqualTo(RECOVERY_BOUND);
  }

  /**
   * A pump's pool, noting when it hands out its first connection once the server is being started
   * again: how long the pool itself took to reconnect, reported next to the recovery.
   */
  private static final class FirstConnection {
    private final DataSource pool;
    private final AtomicLong first = new AtomicLong();
    private volatile boolean armed;

    FirstConnection(DataSource pool) {
      this.pool = pool;
    }

    void arm() {
      armed = true;
    }

    /** Milliseconds from {@code nanos} to the first connection handed out since {@link #arm}. */
    Long after(long nanos) {
      long t = first.get();
      return t == 0 ? null : (t - nanos) / 1_000_000;
    }

    DataSource dataSource() {
      return (DataSource)
          Proxy.newProxyInstance(
              DataSource.class.getClassLoader(),
              new Class<?>[] {DataSource.class},
              (proxy, method, args) -> {
                Object result;
                try {
                  result = method.invoke(pool, args);
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
                if (armed && result instanceof Connection) {
                  first.compareAndSet(0, System.nanoTime());
                }
                return result;
              });
    }
  }

  private static org.messagepump.commands.CommandHandler<Work> recorder(String node) {
    return (w, ctx) ->
        Ledger.record(ctx.tx().connection(), ctx.messageId().toString(), ctx.attempt(), node);
  }
}
