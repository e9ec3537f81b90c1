package org.messagepump.console.internal;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.function.Function;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.jooq.exception.DataAccessException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Transactions;

/**
 * One transaction per console action, which the drivers' operator calls join: the pool, except on
 * the thread running an action, where every {@code getConnection()} returns the action's connection
 * with commit, close and auto-commit changes ignored. So {@code DeadLetters.retry}, {@code
 * EventOperations.reset} or {@code BalancerOperations.unpark}, each of which runs "in a transaction
 * of its own", run in the action's transaction, and the audit row written after them commits with
 * them or not at all.
 *
 * <p>This is what Spring's {@code TransactionAwareDataSourceProxy} does; it is written here (a JDK
 * proxy of {@link Connection}) because the console does not depend on Spring.
 */
public final class ActionTransactions implements DataSource {

  private final DataSource pool;
  private final ThreadLocal<Connection> bound = new ThreadLocal<>();

  public ActionTransactions(DataSource pool) {
    this.pool = pool;
  }

  /**
   * Runs {@code work} in one new transaction at {@code isolation} ({@link
   * Connection#TRANSACTION_READ_COMMITTED} or {@link Connection#TRANSACTION_REPEATABLE_READ}),
   * which every driver call on this thread joins; commits when it returns, rolls back when it
   * throws.
   */
  public <T> T inOne(int isolation, String doing, Function<Tx, T> work) {
    try (Connection c = pool.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      int level = c.getTransactionIsolation();
      c.setAutoCommit(false);
      c.setTransactionIsolation(isolation);
      boolean[] rolledBack = {false};
      bound.set(joined(c, rolledBack));
      try {
        T result = work.apply(Tx.of(c));
        if (rolledBack[0]) {
          // A joined call rolled back without throwing: commit nothing of what is left.
          throw new IllegalStateException(doing + ": a joined call rolled the transaction back");
        }
        c.commit();
        return result;
      } catch (RuntimeException | Error e) {
        try {
          c.rollback();
        } catch (SQLException suppressed) {
          e.addSuppressed(suppressed);
        }
        if (e instanceof DataAccessException d) {
          throw Transactions.wrap(doing, d);
        }
        throw e;
      } finally {
        bound.remove();
        try {
          c.setTransactionIsolation(level);
          c.setAutoCommit(autoCommit);
        } catch (SQLException ignored) {
          // A broken connection: the pool evicts it; the outcome stands.
        }
      }
    } catch (SQLException e) {
      throw new DatabaseException(doing, e);
    }
  }

  private static Connection joined(Connection real, boolean[] rolledBack) {
    return (Connection)
        Proxy.newProxyInstance(
            ActionTransactions.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "close", "commit", "setAutoCommit", "setReadOnly", "setTransactionIsolation":
                  return null; // the action's transaction decides these
                case "rollback":
                  if (args == null || args.length == 0) {
                    rolledBack[0] = true;
                  }
                  break;
                default:
                  break;
              }
              try {
                return method.invoke(real, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection c = bound.get();
    return c != null ? c : pool.getConnection();
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return pool.getConnection(username, password);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return pool.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    pool.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    pool.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return pool.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return pool.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return iface.isInstance(this) ? iface.cast(this) : pool.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return iface.isInstance(this) || pool.isWrapperFor(iface);
  }
}
