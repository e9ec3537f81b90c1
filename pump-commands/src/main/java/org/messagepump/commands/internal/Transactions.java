package org.messagepump.commands.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jooq.exception.DataAccessException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.spi.Tx;

/**
 * Runs work in a transaction of its own, and turns database errors into {@link DatabaseException}.
 */
public final class Transactions {

  private Transactions() {}

  /** Runs {@code work} in a new transaction on a pooled connection and commits. */
  public static <T> T inNew(DataSource dataSource, String doing, Function<Tx, T> work) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        T result = work.apply(Tx.of(c));
        c.commit();
        return result;
      } catch (RuntimeException | Error e) {
        rollbackQuietly(c);
        throw e;
      } catch (SQLException e) {
        rollbackQuietly(c);
        throw e;
      } finally {
        restoreAutoCommit(c, autoCommit);
      }
    } catch (SQLException e) {
      throw new DatabaseException(doing, e);
    } catch (DataAccessException e) {
      throw wrap(doing, e);
    }
  }

  /** Runs {@code work} in the caller's transaction, wrapping database errors. */
  public static <T> T inCallers(Tx tx, String doing, Function<Tx, T> work) {
    try {
      return work.apply(tx);
    } catch (DataAccessException e) {
      throw wrap(doing, e);
    }
  }

  /** A {@link DatabaseException} for a jOOQ error (keeps the SQLState when there is one). */
  public static RuntimeException wrap(String doing, DataAccessException e) {
    SQLException sql = e.getCause(SQLException.class);
    if (sql != null) {
      return new DatabaseException(doing, sql);
    }
    return new DatabaseException(doing, new SQLException(e.getMessage(), e.sqlState(), e));
  }

  private static void restoreAutoCommit(Connection c, boolean autoCommit) {
    try {
      c.setAutoCommit(autoCommit);
    } catch (SQLException ignored) {
      // a broken connection: the pool evicts it; the original outcome stands
    }
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // the connection is broken; the pool evicts it
    }
  }
}
