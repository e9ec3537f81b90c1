package org.messagepump.deployment;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * The formation of {@code scripts/cluster.sh}: a pg_auto_failover monitor, two PostgreSQL 15 nodes
 * (primary and synchronous standby) and PgBouncer, all on loopback. The test drives faults through
 * the script and connects the way an application would: pgjdbc's multi-host URL with {@code
 * targetServerType=primary}, or PgBouncer's port.
 */
final class Cluster {

  static final int BASE = Integer.getInteger("deployment.portBase", 55400);
  static final int NODE1 = BASE + 2;
  static final int NODE2 = BASE + 3;
  static final int BOUNCER = BASE + 10;
  static final String USER = "pump";
  static final String PASSWORD = "pump";

  private static final Path SCRIPT =
      Path.of(System.getProperty("deployment.scripts", "scripts"), "cluster.sh");

  private Cluster() {}

  /** Installs the packages if missing and starts (creating on first use) the formation. */
  static void start() {
    run("install");
    run("start");
  }

  /** Stops every server the script started. */
  static void stop() {
    run("stop");
  }

  /** Runs {@code cluster.sh args} and returns its standard output (trimmed); fails on exit != 0. */
  static String run(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add("bash");
    cmd.add(SCRIPT.toString());
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
    try {
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("cluster.sh " + String.join(" ", args) + " failed: " + out);
      }
      return out;
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + SCRIPT, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The multi-host URL an application uses: both nodes, the primary chosen by pgjdbc. */
  static String multiHostUrl() {
    return "jdbc:postgresql://127.0.0.1:"
        + NODE1
        + ",127.0.0.1:"
        + NODE2
        + "/pump?targetServerType=primary&hostRecheckSeconds=2&connectTimeout=2&socketTimeout=30"
        + "&loginTimeout=5";
  }

  /** A direct URL of one node. */
  static String nodeUrl(int port) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/pump?connectTimeout=2&socketTimeout=10";
  }

  /**
   * PgBouncer's URL: no server-side prepared statements ({@code prepareThreshold=0}), since
   * PgBouncer 1.18 in transaction mode does not track them.
   */
  static String bouncerUrl() {
    return "jdbc:postgresql://127.0.0.1:"
        + BOUNCER
        + "/pump?prepareThreshold=0&connectTimeout=2&socketTimeout=30";
  }

  /** A Hikari pool on {@code url} whose connections carry {@code name} as application name. */
  static HikariDataSource pool(String url, String name, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(USER);
    config.setPassword(PASSWORD);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(0);
    config.setPoolName(name);
    config.setConnectionTimeout(3_000);
    config.setValidationTimeout(1_000);
    config.setInitializationFailTimeout(-1);
    config.addDataSourceProperty("ApplicationName", name);
    return new HikariDataSource(config);
  }

  /** The port of the node that is primary now, or -1 when none answers as one. */
  static int primaryPort() {
    for (int port : new int[] {NODE1, NODE2}) {
      if (isPrimary(port)) {
        return port;
      }
    }
    return -1;
  }

  /**
   * True when the node on {@code port} accepts writes: not in recovery and not read-only
   * (pg_auto_failover keeps a promoted standby read-only until the monitor has confirmed the old
   * primary's demotion; pgjdbc's {@code targetServerType=primary} asks the same).
   */
  static boolean isPrimary(int port) {
    Properties p = new Properties();
    p.setProperty("user", USER);
    p.setProperty("password", PASSWORD);
    p.setProperty("connectTimeout", "1");
    p.setProperty("socketTimeout", "2");
    try (Connection c = DriverManager.getConnection(nodeUrl(port), p);
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT NOT pg_is_in_recovery()"
                    + " AND current_setting('transaction_read_only') = 'off'")) {
      return rs.next() && rs.getBoolean(1);
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * Polls both nodes every 20 ms from now on until one answers as primary and returns that moment
   * (the wall clock, which the servers on this machine share), or null after {@code timeoutMillis}.
   */
  static Instant awaitPrimary(long timeoutMillis, int exceptPort) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    while (System.nanoTime() < deadline) {
      for (int port : new int[] {NODE1, NODE2}) {
        if (port != exceptPort && isPrimary(port)) {
          return Instant.now();
        }
      }
      sleep(20);
    }
    return null;
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
