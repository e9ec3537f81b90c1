package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.function;
import static org.jooq.impl.DSL.val;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.function.Supplier;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Tx;

/**
 * The transaction-scoped advisory lock of a handler with minimal concurrency: whoever holds it runs
 * the handler's only delivery in the cluster; it is released when the transaction ends.
 */
public final class HandlerLock {

  private static final String LOCK_NOT_AVAILABLE = "55P03";

  private final long key;

  /** The lock of {@code handlerKey} in the store of {@code schema}. */
  public HandlerLock(String schema, String handlerKey) {
    this.key = CheckpointQueries.handlerLockKey(schema, handlerKey);
  }

  /** Takes the lock if free (or already held by this transaction); never waits. */
  public boolean tryLock(Tx tx) {
    Boolean got =
        tx.dsl()
            .select(function("pg_try_advisory_xact_lock", SQLDataType.BOOLEAN, val(key)))
            .fetchOne()
            .value1();
    return Boolean.TRUE.equals(got);
  }

  /**
   * Takes the lock, waiting at most {@code wait} for the transaction holding it (typically one
   * delivery of the same handler) to end. Returns false when it is still held after the wait; the
   * transaction stays usable either way.
   */
  public boolean lock(Tx tx, Duration wait) throws SQLException {
    if (tryLock(tx)) {
      return true;
    }
    Object got =
        waiting(
            tx,
            wait,
            () ->
                tx.dsl()
                    .select(function("pg_advisory_xact_lock", SQLDataType.OTHER, val(key)))
                    .execute());
    return got != null;
  }

  /**
   * Runs {@code work} with {@code lock_timeout} set to {@code wait} inside a savepoint; returns its
   * result, or null when a lock wait timed out (the savepoint is rolled back and the transaction
   * stays usable). The previous lock timeout is restored.
   */
  public static <T> T waiting(Tx tx, Duration wait, Supplier<T> work) throws SQLException {
    Connection c = tx.connection();
    Savepoint sp = c.setSavepoint();
    try {
      String previous =
          tx.dsl()
              .select(function("current_setting", SQLDataType.VARCHAR, val("lock_timeout")))
              .fetchOne()
              .value1();
      setLockTimeout(tx, Math.max(1, wait.toMillis()) + "ms");
      T result = work.get();
      setLockTimeout(tx, previous);
      c.releaseSavepoint(sp);
      return result;
    } catch (DataAccessException e) {
      SQLException sql = e.getCause(SQLException.class);
      if (sql != null && LOCK_NOT_AVAILABLE.equals(sql.getSQLState())) {
        c.rollback(sp); // also undoes the local lock_timeout
        return null;
      }
      throw e;
    }
  }

  private static void setLockTimeout(Tx tx, String value) {
    tx.dsl()
        .select(
            function("set_config", SQLDataType.VARCHAR, val("lock_timeout"), val(value), val(true)))
        .execute();
  }
}
