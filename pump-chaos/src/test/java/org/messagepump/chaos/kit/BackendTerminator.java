package org.messagepump.chaos.kit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.messagepump.testkit.PostgresServer;

/**
 * Terminates database backends by application name with {@code pg_terminate_backend}, once or
 * periodically, from a connection of its own (as an operator or a failover would).
 */
public final class BackendTerminator implements AutoCloseable {

  private final PostgresServer server;
  private final String database;
  private final String applicationNamePattern;
  private final AtomicLong terminated = new AtomicLong();
  private final AtomicLong rounds = new AtomicLong();
  private ScheduledExecutorService timer;

  /**
   * A terminator for the backends of {@code database} whose application name matches the SQL {@code
   * LIKE} pattern {@code applicationNamePattern}.
   */
  public BackendTerminator(PostgresServer server, String database, String applicationNamePattern) {
    this.server = server;
    this.database = database;
    this.applicationNamePattern = applicationNamePattern;
  }

  /** Terminates the matching backends now and returns how many were terminated. */
  public int terminateNow() {
    try (Connection c = server.connect(database);
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                    + " WHERE datname = ? AND application_name LIKE ? AND pid <> pg_backend_pid()")) {
      ps.setString(1, database);
      ps.setString(2, applicationNamePattern);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        int n = rs.getInt(1);
        terminated.addAndGet(n);
        rounds.incrementAndGet();
        return n;
      }
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: pg_terminate_backend failed", e);
    }
  }

  /** Terminates the matching backends every {@code period} until {@link #stop()}. */
  public synchronized void every(Duration period) {
    if (timer != null) {
      throw new IllegalStateException("chaos: already terminating periodically");
    }
    timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "chaos-terminator");
              t.setDaemon(true);
              return t;
            });
    timer.scheduleWithFixedDelay(
        () -> {
          try {
            terminateNow();
          } catch (RuntimeException e) {
            // the next round tries again
          }
        },
        0,
        period.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /** Stops periodic termination and waits for a running round. */
  public synchronized void stop() {
    if (timer != null) {
      timer.shutdown();
      try {
        timer.awaitTermination(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      timer = null;
    }
  }

  /** Backends terminated so far. */
  public long terminated() {
    return terminated.get();
  }

  /** Rounds run so far. */
  public long rounds() {
    return rounds.get();
  }

  /** Stops periodic termination. */
  @Override
  public void close() {
    stop();
  }
}
