package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosProxy;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 4: one pump reaches PostgreSQL through a {@link ChaosProxy}, another directly. The proxy
 * resets every connection mid-drain, then blackholes the proxied pump for 20 s while the direct one
 * keeps working. The proxied pool's sessions carry {@code idle_in_transaction_session_timeout}, so
 * the server ends the blackholed pump's open transactions and their row locks go with them.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class ProxyFaultsIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  private static final String PROXIED = "proxy-node-a";
  private static final String DIRECT = "direct-node-b";
  private static final Duration BLACKHOLE = Duration.ofSeconds(20);

  /** The server ends a proxied session idle inside a transaction for this long. */
  private static final Duration IDLE_IN_TX_TIMEOUT = Duration.ofSeconds(5);

  /** The proxied pool's client-side guard: a read waiting this long fails the connection. */
  private static final Duration SOCKET_TIMEOUT = Duration.ofSeconds(10);

  @Test
  void resetsAndABlackholeLoseNothing(TestDatabase db) throws SQLException {
    int commands = Chaos.size(10_000, 3_000);
    int fresh = 500;
    CommandQueue queue = COMMANDS.queue();
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();
    for (int i = 0; i < commands; i += 1_000) {
      Chaos.enqueue(queue, ledger, i, Math.min(commands, i + 1_000));
    }

    ChaosProxy proxy = ChaosProxy.start(db.server().host(), db.server().port());
    HikariDataSource proxiedPool = proxiedPool(db, proxy);
    HikariDataSource directPool = db.newDataSource(DIRECT, 8);
    MessagePump a =
        Chaos.recordingPump(proxiedPool, queue, PROXIED, 4, MessagePump.UNLIMITED_FAILURES);
    MessagePump b =
        Chaos.recordingPump(directPool, queue, DIRECT, 4, MessagePump.UNLIMITED_FAILURES);
    Instant reset;
    Instant blackholeStart;
    Instant healed;
    int resetConnections;
    long handledBeforeReset;
    long handledBeforeBlackhole;
    long proxiedRowsBeforeReset;
    Duration locksReleasedAfter;
    long stuckAtBlackhole;
    long proxiedRowsInBlackhole;
    long directRowsInBlackhole;
    try {
      a.start();
      b.start();
      Chaos.awaitHandled(ledger, commands / 5, Duration.ofSeconds(120));
      proxiedRowsBeforeReset = rowsOf(ledger, PROXIED, Instant.EPOCH, ledger.now());

      // 1. Reset every proxied connection mid-drain: both ends get a TCP RST.
      handledBeforeReset = ledger.figures().handled();
      resetConnections = proxy.resetAll();
      reset = ledger.mark("proxy-reset-all");
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> ledger.recoveryAfter(reset, PROXIED).isPresent());

      // 2. Blackhole the proxied pump for 20 s while the direct one works.
      Chaos.awaitHandled(ledger, commands / 2, Duration.ofSeconds(120));
      handledBeforeBlackhole = ledger.figures().handled();
      blackholeStart = ledger.mark("proxy-blackhole");
      proxy.blackhole(BLACKHOLE);
      long t0 = System.nanoTime();
      Chaos.pace(Duration.ofSeconds(1));
      stuckAtBlackhole = proxiedIdleInTransaction(db);
      // The server ends the proxied pump's transactions stuck behind the blackhole.
      await()
          .atMost(BLACKHOLE.minusSeconds(2))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> proxiedIdleInTransaction(db) == 0);
      locksReleasedAfter = Duration.ofNanos(System.nanoTime() - t0);
      await().atMost(BLACKHOLE.plusSeconds(5)).until(() -> !proxy.isBlackholed());
      healed = ledger.mark("proxy-healed");
      proxiedRowsInBlackhole = rowsOf(ledger, PROXIED, blackholeStart.plusSeconds(1), healed);
      directRowsInBlackhole = rowsOf(ledger, DIRECT, blackholeStart, healed);

      // 3. The direct pump has shown it works; fresh work now must be taken by the proxied one.
      Chaos.awaitHandled(ledger, commands, Duration.ofSeconds(180));
      b.close();
      Chaos.enqueue(queue, ledger, commands, commands + fresh);
      Chaos.awaitHandled(ledger, commands + fresh, Duration.ofSeconds(120));
      assertThat(a.isRunning()).as("proxied pump running").isTrue();
      try (Connection c = proxiedPool.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 1")) {
        assertThat(rs.next()).as("the proxied pool hands out working connections").isTrue();
      }
    } finally {
      a.close();
      b.close();
      proxiedPool.close();
      proxy.close();
    }
    long idleInTx =
        db.queryLong(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name IN ('"
                + PROXIED
                + "', '"
                + DIRECT
                + "') AND state LIKE 'idle in transaction%'");
    Duration recoveryAfterReset = ledger.recoveryAfter(reset, PROXIED).orElseThrow();
    Duration recoveryAfterHeal = ledger.recoveryAfter(healed, PROXIED).orElseThrow();
    Ledger.Figures f = ledger.figures();
    ChaosReport.of("4-proxy-faults")
        .put("commands", commands + fresh)
        .put("proxyConnectionsAccepted", proxy.accepted())
        .put("connectionsReset", resetConnections)
        .put("handledBeforeReset", handledBeforeReset)
        .put("handledBeforeBlackhole", handledBeforeBlackhole)
        .put("blackholeMs", BLACKHOLE)
        .put("idleInTransactionTimeoutMs", IDLE_IN_TX_TIMEOUT)
        .put("stuckTransactionsAfter1s", stuckAtBlackhole)
        .put("stuckTransactionsEndedAfterMs", locksReleasedAfter)
        .put("proxiedRowsDuringBlackhole", proxiedRowsInBlackhole)
        .put("directRowsDuringBlackhole", directRowsInBlackhole)
        .put(f)
        .put("recoveryAfterResetMs", recoveryAfterReset)
        .put("recoveryAfterHealMs", recoveryAfterHeal)
        .write();
    assertThat(proxiedRowsBeforeReset).as("the proxied pump worked through the proxy").isPositive();
    assertThat(resetConnections).as("connections reset").isPositive();
    assertThat(handledBeforeReset).as("the reset hit a drain").isLessThan(commands);
    assertThat(handledBeforeBlackhole).as("the blackhole hit a drain").isLessThan(commands);
    assertThat(proxiedRowsInBlackhole).as("proxied deliveries during the blackhole").isZero();
    assertThat(directRowsInBlackhole).as("direct deliveries during the blackhole").isPositive();
    assertThat(f.lost()).as("lost").isZero();
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(idleInTx).as("backends left idle in transaction").isZero();
  }

  /**
   * A pool through the proxy. Server side, {@code idle_in_transaction_session_timeout} ends a
   * session whose transaction waits on a client that no longer answers (its row locks go with it);
   * client side, {@code socketTimeout} fails a read that waits too long, and the login and connect
   * timeouts bound a new connection into the blackhole.
   */
  private static HikariDataSource proxiedPool(TestDatabase db, ChaosProxy proxy) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(proxy.rewrite(db.jdbcUrl()));
    config.setUsername(db.server().user());
    config.setPassword(db.server().password());
    config.setMaximumPoolSize(8);
    config.setMinimumIdle(0);
    config.setPoolName(PROXIED);
    config.setConnectionTimeout(5_000);
    config.addDataSourceProperty("ApplicationName", PROXIED);
    config.addDataSourceProperty(
        "options", "-c idle_in_transaction_session_timeout=" + IDLE_IN_TX_TIMEOUT.toMillis());
    config.addDataSourceProperty("socketTimeout", Long.toString(SOCKET_TIMEOUT.toSeconds()));
    config.addDataSourceProperty("loginTimeout", "5");
    config.addDataSourceProperty("connectTimeout", "5");
    return new HikariDataSource(config);
  }

  private static long proxiedIdleInTransaction(TestDatabase db) {
    return db.queryLong(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
            + PROXIED
            + "' AND state LIKE 'idle in transaction%'");
  }

  private static long rowsOf(Ledger ledger, String node, Instant from, Instant to) {
    return ledger.queryLong(
        "SELECT count(*) FROM chaos.ledger WHERE node = '"
            + node
            + "' AND handled_at > '"
            + from
            + "' AND handled_at < '"
            + to
            + "'");
  }
}
