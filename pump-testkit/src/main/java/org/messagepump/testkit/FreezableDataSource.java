package org.messagepump.testkit;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A {@link DataSource} that refuses new connections while {@linkplain #freeze() frozen}, as the
 * database calls of a stopped or partitioned process never arrive: for tests of what a pump does
 * when its own process cannot reach the database while others can (heartbeats that fail, a lease
 * that runs out). Connections already handed out keep working. Not a wrapper: {@link #unwrap}
 * refuses.
 */
public final class FreezableDataSource implements DataSource {

  private final DataSource target;
  private final AtomicBoolean frozen = new AtomicBoolean();

  /** Hands out {@code target}'s connections while not frozen. */
  public FreezableDataSource(DataSource target) {
    if (target == null) {
      throw new IllegalArgumentException("target must not be null");
    }
    this.target = target;
  }

  /** From now on new connections are refused (SQLState 08001). */
  public void freeze() {
    frozen.set(true);
  }

  /** New connections are handed out again. */
  public void thaw() {
    frozen.set(false);
  }

  @Override
  public Connection getConnection() throws SQLException {
    if (frozen.get()) {
      throw new SQLException("the data source is frozen", "08001");
    }
    return target.getConnection();
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    if (frozen.get()) {
      throw new SQLException("the data source is frozen", "08001");
    }
    return target.getConnection(user, password);
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
