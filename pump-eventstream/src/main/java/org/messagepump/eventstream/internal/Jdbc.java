package org.messagepump.eventstream.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.jooq.exception.DataAccessException;
import org.messagepump.core.spi.StatementCache;

/**
 * Runs the store's rendered statements ({@link StatementCache.Statement}) through JDBC where a
 * caller cannot throw {@link SQLException}: the error becomes jOOQ's {@link DataAccessException},
 * as when jOOQ ran the statement, so the store's callers ({@code Transactions}, {@link
 * HandlerLock#waiting}) see it as before, SQLState included.
 */
final class Jdbc {

  private Jdbc() {}

  /** JDBC work that may fail with an {@link SQLException}. */
  interface Work<T> {
    T run() throws SQLException;
  }

  /** Runs {@code work}; an {@link SQLException} becomes a {@link DataAccessException}. */
  static <T> T unchecked(String doing, Work<T> work) {
    try {
      return work.run();
    } catch (SQLException e) {
      throw new DataAccessException(doing, e);
    }
  }

  /** The first column of the first row as a bigint, or null when there is no row. */
  static Long firstLong(StatementCache.Statement s, Connection c, Object... values)
      throws SQLException {
    try (PreparedStatement ps = s.prepare(c, values);
        ResultSet rs = ps.executeQuery()) {
      return rs.next() ? rs.getLong(1) : null;
    }
  }

  /** Whether the statement returns a row. */
  static boolean anyRow(StatementCache.Statement s, Connection c, Object... values)
      throws SQLException {
    try (PreparedStatement ps = s.prepare(c, values);
        ResultSet rs = ps.executeQuery()) {
      return rs.next();
    }
  }
}
