package org.messagepump.eventstream.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jooq.exception.DataAccessException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.PumpException;
import org.messagepump.core.spi.Tx;

/** Runs API calls in their own transaction and keeps {@link SQLException} out of the API. */
public final class Transactions {

  private Transactions() {}

  /** Runs {@code work} in a new transaction on {@code dataSource} and commits it. */
  public static <T> T inTransaction(DataSource dataSource, String doing, Function<Tx, T> work) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        T result = wrapped(doing, () -> work.apply(Tx.of(c)));
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
    }
  }

  /** Runs {@code work}, turning jOOQ's and JDBC's errors into {@link DatabaseException}. */
  public static <T> T wrapped(String doing, Supplier<T> work) {
    try {
      return work.get();
    } catch (DataAccessException e) {
      SQLException sql = e.getCause(SQLException.class);
      if (sql != null) {
        throw new DatabaseException(doing, sql);
      }
      throw new PumpException(doing + " failed: " + e.getMessage(), e);
    }
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException | RuntimeException ignored) {
      // The connection is broken; the pool evicts it.
    }
  }

  private static void restore(Connection c, boolean autoCommit) {
    try {
      c.setAutoCommit(autoCommit);
    } catch (SQLException | RuntimeException ignored) {
      // As above.
    }
  }
}
