package org.messagepump.core.spi;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jooq.exception.DataAccessException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.Tx;

/**
 * Runs database work in a transaction and turns JDBC and jOOQ errors into {@link
 * DatabaseException}, so {@link SQLException} never escapes a public API unwrapped. Drivers use it
 * for their operations outside the pump (enqueue, operator actions, introspection).
 */
public final class Transactions {

  private Transactions() {}

  /**
   * Runs {@code work} in a new transaction on a pooled connection and commits; on any failure rolls
   * back and rethrows, database errors wrapped in a {@link DatabaseException} saying what was being
   * done.
   */
  public static <T> T inNew(DataSource dataSource, String doing, Function<Tx, T> work) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        T result = work.apply(Tx.of(c));
        c.commit();
        return result;
      } catch (RuntimeException | Error | SQLException e) {
        rollbackQuietly(c);
        throw e;
      } finally {
        try {
          c.setAutoCommit(autoCommit);
        } catch (SQLException ignored) {
          // A broken connection: the pool evicts it; the original outcome stands.
        }
      }
    } catch (SQLException e) {
      throw new DatabaseException(doing, e);
    } catch (DataAccessException e) {
      throw wrap(doing, e);
    }
  }

  /** Runs {@code work} in the caller's transaction (nothing is committed here), wrapping errors. */
  public static <T> T inCaller(Tx tx, String doing, Function<Tx, T> work) {
    try {
      return work.apply(tx);
    } catch (DataAccessException e) {
      throw wrap(doing, e);
    }
  }

  /** A jOOQ error as a {@link DatabaseException}, keeping the SQLState when there is one. */
  public static DatabaseException wrap(String doing, DataAccessException e) {
    SQLException sql = e.getCause(SQLException.class);
    return new DatabaseException(
        doing, sql != null ? sql : new SQLException(e.getMessage(), e.sqlState(), e));
  }

  /**
   * Rolls back, ignoring a broken connection (closing it returns it to the pool, which evicts it).
   */
  /**
   * Rolls the connection back, ignoring a failure (the connection may already be broken); for the
   * paths that give up on a transaction.
   *
   * @param c the connection
   */
  public static void rollbackQuietly(Connection c) {
    try {
      if (!c.isClosed()) {
        c.rollback();
      }
    } catch (SQLException | RuntimeException ignored) {
      // The connection is gone or broken.
    }
  }
}
