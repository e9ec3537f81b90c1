package org.messagepump.chaos.kit;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * Wraps a real pool (such as HikariCP) and makes every k-th statement execution fail with an {@link
 * SQLException} of a chosen SQLState instead of running, taking the states in turn. For
 * connection-class states ({@code 08*}) it also closes the real connection first, so the pool sees
 * it broken and evicts it. Everything else runs on the real PostgreSQL: this is fault injection,
 * not a mock.
 */
public final class FaultInjectingDataSource {

  private final DataSource delegate;
  private final long every;
  private final List<String> sqlStates;
  private final AtomicLong executions = new AtomicLong();
  private final Map<String, AtomicLong> injected = new ConcurrentHashMap<>();
  private volatile boolean enabled = true;

  private FaultInjectingDataSource(DataSource delegate, long every, List<String> sqlStates) {
    this.delegate = delegate;
    this.every = every;
    this.sqlStates = List.copyOf(sqlStates);
  }

  /**
   * A wrapper failing every {@code every}-th statement execution, with {@code sqlStates} in turn
   * (e.g. {@code 40001, 40P01, 55P03, 08006}).
   */
  public static FaultInjectingDataSource wrap(
      DataSource delegate, long every, List<String> sqlStates) {
    if (every < 1) {
      throw new IllegalArgumentException("every must be >= 1: " + every);
    }
    if (sqlStates.isEmpty()) {
      throw new IllegalArgumentException("sqlStates must not be empty");
    }
    return new FaultInjectingDataSource(delegate, every, sqlStates);
  }

  /** The data source to hand to the code under test. */
  public DataSource dataSource() {
    return (DataSource)
        Proxy.newProxyInstance(
            DataSource.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              Object result = invoke(delegate, method, args);
              if (result instanceof Connection c) {
                return connection(c);
              }
              return result;
            });
  }

  /** Turns injection on or off (e.g. off to check the end state). */
  public void enabled(boolean enabled) {
    this.enabled = enabled;
  }

  /** Statement executions seen so far. */
  public long executions() {
    return executions.get();
  }

  /** Faults injected so far, by SQLState. */
  public Map<String, Long> injected() {
    Map<String, Long> out = new java.util.TreeMap<>();
    injected.forEach((k, v) -> out.put(k, v.get()));
    return out;
  }

  /** Faults injected so far. */
  public long injectedTotal() {
    return injected.values().stream().mapToLong(AtomicLong::get).sum();
  }

  private Connection connection(Connection real) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              Object result = invoke(real, method, args);
              if (result instanceof Statement s && method.getName().startsWith("prepare")
                  || result instanceof Statement && method.getName().equals("createStatement")) {
                return statement(real, (Statement) result);
              }
              return result;
            });
  }

  private Object statement(Connection real, Statement s) {
    Class<?> type =
        s instanceof java.sql.CallableStatement
            ? java.sql.CallableStatement.class
            : s instanceof java.sql.PreparedStatement
                ? java.sql.PreparedStatement.class
                : Statement.class;
    InvocationHandler h =
        (proxy, method, args) -> {
          if (method.getName().startsWith("execute")) {
            maybeFail(real);
          }
          return invoke(s, method, args);
        };
    return Proxy.newProxyInstance(Statement.class.getClassLoader(), new Class<?>[] {type}, h);
  }

  private void maybeFail(Connection real) throws SQLException {
    long n = executions.incrementAndGet();
    if (!enabled || n % every != 0) {
      return;
    }
    String state = sqlStates.get((int) ((n / every - 1) % sqlStates.size()));
    injected.computeIfAbsent(state, k -> new AtomicLong()).incrementAndGet();
    if (state.startsWith("08")) {
      try {
        real.unwrap(Connection.class).close();
      } catch (SQLException ignored) {
        // broken already
      }
    }
    throw new SQLException("chaos: injected fault " + state, state);
  }

  private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
