package org.messagepump.balancer.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.spi.Tx;

/** Runs API operations in their own transaction or in a caller's, wrapping database errors. */
public final class Transactions {

  private Transactions() {}

  /** Runs {@code work} in a new transaction on a pooled connection and commits it. */
  public static <T> T inNew(DataSource dataSource, String doing, Function<DSLContext, T> work) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        T result = work.apply(Tx.of(c).dsl());
        c.commit();
        return result;
      } catch (RuntimeException | Error e) {
        rollbackQuietly(c);
        throw e;
      } finally {
        restore(c, autoCommit);
      }
    } catch (SQLException e) {
      throw new DatabaseException(doing, e);
    } catch (DataAccessException e) {
      throw wrap(doing, e);
    }
  }

  /** Runs {@code work} in the caller's transaction (nothing is committed here). */
  public static <T> T inCaller(Connection c, String doing, Function<DSLContext, T> work) {
    try {
      return work.apply(Tx.of(c).dsl());
    } catch (DataAccessException e) {
      throw wrap(doing, e);
    }
  }

  /** A jOOQ error as the library's {@link DatabaseException}. */
  public static DatabaseException wrap(String doing, DataAccessException e) {
    SQLException sql = e.getCause(SQLException.class);
    return new DatabaseException(
        doing, sql != null ? sql : new SQLException(e.getMessage(), e.sqlState(), e));
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // The connection is broken; the pool evicts it.
    }
  }

  private static void restore(Connection c, boolean autoCommit) {
    try {
      c.setAutoCommit(autoCommit);
    } catch (SQLException ignored) {
      // As above.
    }
  }
}
