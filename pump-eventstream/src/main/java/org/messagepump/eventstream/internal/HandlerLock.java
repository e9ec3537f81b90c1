package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.function;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.function.Supplier;
import org.jooq.Param;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.StatementCache;

/**
 * The transaction-scoped advisory lock of a handler with minimal concurrency: whoever holds it runs
 * the handler's only delivery in the cluster; it is released when the transaction ends.
 *
 * <p>Its statements (taken per poll and per delivery of such a handler) are built by jOOQ and
 * rendered once ({@link StatementCache#render}), run through JDBC with every value bound.
 */
public final class HandlerLock {

  private static final String LOCK_NOT_AVAILABLE = "55P03";

  private static final Param<Long> KEY = StatementCache.parameter("key", SQLDataType.BIGINT);
  private static final Param<String> SETTING =
      StatementCache.parameter("setting", SQLDataType.VARCHAR);

  private static final StatementCache.Statement TRY_LOCK =
      StatementCache.render(
          dsl -> dsl.select(function("pg_try_advisory_xact_lock", SQLDataType.BOOLEAN, KEY)),
          "key");
  private static final StatementCache.Statement LOCK =
      StatementCache.render(
          dsl -> dsl.select(function("pg_advisory_xact_lock", SQLDataType.OTHER, KEY)), "key");
  private static final StatementCache.Statement CURRENT_SETTING =
      StatementCache.render(
          dsl -> dsl.select(function("current_setting", SQLDataType.VARCHAR, SETTING)), "setting");
  private static final StatementCache.Statement SET_CONFIG =
      StatementCache.render(
          dsl ->
              dsl.select(
                  function(
                      "set_config",
                      SQLDataType.VARCHAR,
                      SETTING,
                      StatementCache.parameter("value", SQLDataType.VARCHAR),
                      StatementCache.parameter("local", SQLDataType.BOOLEAN))),
          "setting",
          "value",
          "local");

  private final long key;

  /** The lock of {@code handlerKey} in the store of {@code schema}. */
  public HandlerLock(String schema, String handlerKey) {
    this.key = CheckpointQueries.handlerLockKey(schema, handlerKey);
  }

  /** Takes the lock if free (or already held by this transaction); never waits. */
  public boolean tryLock(Tx tx) throws SQLException {
    return tryLock(tx.connection(), key);
  }

  /** Takes advisory lock {@code key} if free (or already held by this transaction); never waits. */
  static boolean tryLock(Connection c, long key) throws SQLException {
    try (PreparedStatement ps = TRY_LOCK.prepare(c, key);
        ResultSet rs = ps.executeQuery()) {
      return rs.next() && rs.getBoolean(1);
    }
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
    Connection c = tx.connection();
    Object got =
        waiting(
            tx,
            wait,
            () ->
                Jdbc.unchecked(
                    "waiting for a handler lock",
                    () -> {
                      try (PreparedStatement ps = LOCK.prepare(c, key)) {
                        ps.execute();
                      }
                      return Boolean.TRUE;
                    }));
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
      String previous;
      try (PreparedStatement ps = CURRENT_SETTING.prepare(c, "lock_timeout");
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        previous = rs.getString(1);
      }
      setLockTimeout(c, Math.max(1, wait.toMillis()) + "ms");
      T result = work.get();
      setLockTimeout(c, previous);
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

  private static void setLockTimeout(Connection c, String value) throws SQLException {
    try (PreparedStatement ps = SET_CONFIG.prepare(c, "lock_timeout", value, true)) {
      ps.execute();
    }
  }
}
