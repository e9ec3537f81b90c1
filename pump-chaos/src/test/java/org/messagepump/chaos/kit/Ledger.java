package org.messagepump.chaos.kit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The chaos suite's book of record, in schema {@code chaos}: handlers {@link #record} each message
 * they handle (id, attempt, node) in the same transaction as their effects, producers {@link
 * #acknowledge} what they enqueued once it committed, and tests mark faults with the database
 * clock. Every figure is computed in SQL: lost = acknowledged − handled, duplicates = ledger rows −
 * distinct ids, recovery = time from a fault to the next completed delivery.
 *
 * <p>Handlers in lease mode, which run outside any transaction of the pump, also {@link #recordRun
 * record each run} as it starts (committed at once), so that runs whose completion never committed
 * (a killed or frozen holder) can be counted against the completions.
 */
public final class Ledger {

  /** The figures of a run. */
  public record Figures(
      long acknowledged, long ledgerRows, long handled, long lost, long duplicates) {

    /** True when nothing acknowledged was lost and nothing was handled twice. */
    public boolean exactlyOnce() {
      return lost == 0 && duplicates == 0;
    }
  }

  private final DataSource dataSource;

  private Ledger(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** Creates the {@code chaos} schema if missing and returns a ledger on {@code dataSource}. */
  public static Ledger install(DataSource dataSource) {
    Ledger l = new Ledger(dataSource);
    l.execute(
        "CREATE SCHEMA IF NOT EXISTS chaos;"
            + "CREATE TABLE IF NOT EXISTS chaos.acknowledged (message_id text PRIMARY KEY,"
            + " acknowledged_at timestamptz NOT NULL DEFAULT clock_timestamp());"
            + "CREATE TABLE IF NOT EXISTS chaos.ledger (seq bigserial PRIMARY KEY,"
            + " message_id text NOT NULL, attempt integer NOT NULL, node text NOT NULL,"
            + " stream text, position bigint,"
            + " handled_at timestamptz NOT NULL DEFAULT clock_timestamp());"
            + "CREATE INDEX IF NOT EXISTS ledger_message_id ON chaos.ledger (message_id);"
            + "CREATE INDEX IF NOT EXISTS ledger_handled_at ON chaos.ledger (handled_at);"
            + "CREATE TABLE IF NOT EXISTS chaos.runs (seq bigserial PRIMARY KEY,"
            + " message_id text NOT NULL, attempt integer NOT NULL, node text NOT NULL,"
            + " token bigint NOT NULL, started_at timestamptz NOT NULL DEFAULT clock_timestamp());"
            + "CREATE INDEX IF NOT EXISTS runs_message_id ON chaos.runs (message_id);"
            + "CREATE TABLE IF NOT EXISTS chaos.marks (seq bigserial PRIMARY KEY, label text NOT NULL,"
            + " marked_at timestamptz NOT NULL DEFAULT clock_timestamp())");
    return l;
  }

  /** Empties the ledger, the runs, the acknowledgements and the marks. */
  public void reset() {
    execute("TRUNCATE chaos.acknowledged, chaos.ledger, chaos.runs, chaos.marks");
  }

  /**
   * Records, in a transaction of its own on {@code dataSource}, that a lease-mode handler started a
   * run of a message under the claim of fencing token {@code token}.
   */
  public static void recordRun(
      DataSource dataSource, String messageId, int attempt, String node, long token)
      throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO chaos.runs (message_id, attempt, node, token) VALUES (?, ?, ?, ?)")) {
      c.setAutoCommit(true);
      ps.setString(1, messageId);
      ps.setInt(2, attempt);
      ps.setString(3, node);
      ps.setLong(4, token);
      ps.executeUpdate();
    }
  }

  /**
   * Records a handled message inside the handler's transaction on {@code connection} (not
   * committed: it commits or rolls back with the handler's effects).
   */
  public static void record(Connection connection, String messageId, int attempt, String node)
      throws SQLException {
    record(connection, messageId, attempt, node, null, -1);
  }

  /** Records a handled message with its stream (or partition key) and position in it. */
  public static void record(
      Connection connection,
      String messageId,
      int attempt,
      String node,
      String stream,
      long position)
      throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement(
            "INSERT INTO chaos.ledger (message_id, attempt, node, stream, position)"
                + " VALUES (?, ?, ?, ?, ?)")) {
      ps.setString(1, messageId);
      ps.setInt(2, attempt);
      ps.setString(3, node);
      ps.setString(4, stream);
      if (position < 0) {
        ps.setNull(5, java.sql.Types.BIGINT);
      } else {
        ps.setLong(5, position);
      }
      ps.executeUpdate();
    }
  }

  /** Records, after the producer's commit, that these messages were acknowledged to it. */
  public void acknowledge(Collection<String> messageIds) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO chaos.acknowledged (message_id) SELECT unnest(?::text[])"
                    + " ON CONFLICT DO NOTHING")) {
      ps.setArray(1, c.createArrayOf("text", messageIds.toArray()));
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: acknowledging failed", e);
    }
  }

  /** Writes a mark (a fault, a restart) and returns its time by the database clock. */
  public Instant mark(String label) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO chaos.marks (label) VALUES (?) RETURNING marked_at")) {
      ps.setString(1, label);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getTimestamp(1).toInstant();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: marking failed", e);
    }
  }

  /** The database clock now. */
  public Instant now() {
    return queryInstant("SELECT clock_timestamp()").orElseThrow();
  }

  /** Lost, duplicated and handled counts, computed in SQL. */
  public Figures figures() {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT (SELECT count(*) FROM chaos.acknowledged),"
                    + " (SELECT count(*) FROM chaos.ledger),"
                    + " (SELECT count(DISTINCT message_id) FROM chaos.ledger),"
                    + " (SELECT count(*) FROM chaos.acknowledged a WHERE NOT EXISTS"
                    + "   (SELECT 1 FROM chaos.ledger l WHERE l.message_id = a.message_id)),"
                    + " (SELECT count(*) - count(DISTINCT message_id) FROM chaos.ledger)")) {
      rs.next();
      return new Figures(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5));
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: computing the figures failed", e);
    }
  }

  /** Number of ledger rows (handled deliveries, duplicates included). */
  public long rows() {
    return figures().ledgerRows();
  }

  /**
   * Time from {@code from} to the first delivery recorded after it (by {@code node}, or any node
   * when null), or empty when none was recorded since.
   */
  public Optional<Duration> recoveryAfter(Instant from, String node) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT min(handled_at) FROM chaos.ledger WHERE handled_at > ?"
                    + " AND (?::text IS NULL OR node = ?)")) {
      ps.setTimestamp(1, Timestamp.from(from));
      ps.setString(2, node);
      ps.setString(3, node);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        Timestamp t = rs.getTimestamp(1);
        return t == null ? Optional.empty() : Optional.of(Duration.between(from, t.toInstant()));
      }
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: computing the recovery failed", e);
    }
  }

  /**
   * Stream order violations: ledger rows whose position is not greater than that of the previous
   * row of the same stream (in ledger order).
   */
  public long orderViolations() {
    return queryLong(
        "SELECT count(*) FROM (SELECT position, lag(position) OVER (PARTITION BY stream ORDER BY"
            + " seq) AS prev FROM chaos.ledger WHERE stream IS NOT NULL) x"
            + " WHERE prev IS NOT NULL AND position <= prev");
  }

  /** Runs a query whose first column of the first row is a number. */
  public long queryLong(String sql) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: " + sql + " failed", e);
    }
  }

  private Optional<Instant> queryInstant(String sql) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      Timestamp t = rs.getTimestamp(1);
      return Optional.ofNullable(t).map(Timestamp::toInstant);
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: " + sql + " failed", e);
    }
  }

  private void execute(String sql) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("chaos: " + sql + " failed", e);
    }
  }
}
