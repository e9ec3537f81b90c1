package org.messagepump.core;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayDeque;
import java.util.Deque;
import org.jooq.TransactionContext;
import org.jooq.TransactionProvider;
import org.jooq.exception.DataAccessException;

/**
 * jOOQ's transaction SPI for a {@link Tx}: {@code tx.dsl().transaction(...)} runs as a savepoint of
 * the enclosing transaction, never as a commit. A {@link Tx} is a transaction someone else owns
 * (the pump, or the caller who enqueues in their own transaction), so a nested jOOQ transaction
 * must not end it. jOOQ's default provider commits at the top level, which inside a handler would
 * commit the pump's transaction half-way through a batch.
 */
final class SavepointTransactionProvider implements TransactionProvider {

  private final Connection connection;
  private final Deque<Savepoint> savepoints = new ArrayDeque<>();

  SavepointTransactionProvider(Connection connection) {
    this.connection = connection;
  }

  @Override
  public void begin(TransactionContext ctx) {
    try {
      savepoints.push(connection.setSavepoint());
    } catch (SQLException e) {
      throw new DataAccessException("setting a savepoint for a nested transaction failed", e);
    }
  }

  @Override
  public void commit(TransactionContext ctx) {
    Savepoint sp = savepoints.pop();
    try {
      connection.releaseSavepoint(sp);
    } catch (SQLException e) {
      throw new DataAccessException("releasing a nested transaction's savepoint failed", e);
    }
  }

  @Override
  public void rollback(TransactionContext ctx) {
    Savepoint sp = savepoints.pop();
    try {
      connection.rollback(sp);
    } catch (SQLException e) {
      throw new DataAccessException("rolling back a nested transaction failed", e);
    }
  }
}
