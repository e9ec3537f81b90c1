package org.messagepump.testkit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Probes of what holds PostgreSQL's vacuum horizon back: the transactions open on the server, and
 * whether vacuum can clean a table churned now. A transaction held open (a handler running inside
 * the pump's transaction, for example) keeps every row deleted after it started from being removed;
 * with none open, vacuum empties the churned table down to 0 pages.
 */
public final class VacuumHorizon {

  private static final Pattern TABLE = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

  private VacuumHorizon() {}

  /**
   * The client backends of the server with a transaction open for longer than {@code age} now
   * ({@link Duration#ZERO}: any open transaction), other than the one asking. A negative or null
   * age is refused with {@link IllegalArgumentException}.
   */
  public static long openTransactionsOlderThan(DataSource ds, Duration age) throws SQLException {
    if (age == null || age.isNegative()) {
      throw new IllegalArgumentException("age must be zero or positive: " + age);
    }
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE xact_start IS NOT NULL"
                    + " AND xact_start <= clock_timestamp() - make_interval(secs => ?)"
                    + " AND pid <> pg_backend_pid() AND backend_type = 'client backend'")) {
      ps.setDouble(1, age.toNanos() / 1e9);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * Writes and deletes 10,000 rows of {@code table} (an unquoted lower-case name, created if
   * missing, else {@link IllegalArgumentException}), vacuums it, and returns the pages it has left:
   * 0 when vacuum could remove every dead row (nothing holds the horizon back), else the pages
   * still there.
   */
  public static long pagesLeftAfterChurnAndVacuum(DataSource ds, String table) throws SQLException {
    if (table == null || !TABLE.matcher(table).matches()) {
      throw new IllegalArgumentException(
          "table must be an unquoted lower-case identifier: " + table);
    }
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      c.setAutoCommit(true);
      st.execute("CREATE TABLE IF NOT EXISTS " + table + " (n int)");
      st.execute("TRUNCATE " + table);
      st.execute("INSERT INTO " + table + " SELECT g FROM generate_series(1, 10000) g");
      st.execute("DELETE FROM " + table);
    }
    long pages = -1;
    for (int i = 0; i < 5 && pages != 0; i++) {
      if (i > 0) {
        try {
          Thread.sleep(200);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted between vacuums", e);
        }
      }
      try (Connection c = ds.getConnection();
          Statement st = c.createStatement()) {
        c.setAutoCommit(true);
        st.execute("VACUUM " + table);
      }
      pages = pages(ds, table);
    }
    return pages;
  }

  private static long pages(DataSource ds, String table) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT pg_relation_size(?::regclass) / current_setting('block_size')::int")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
