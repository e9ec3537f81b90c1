package org.messagepump.core.engine;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * An in-memory stand-in for a database with real transaction semantics for the pump's unit tests:
 * each connection keeps a journal of effects that a commit applies, a rollback discards, and a
 * rollback to a savepoint truncates. It counts open transactions, commits, rollbacks and aborts.
 * (Tests that touch SQL use real PostgreSQL; this only drives the pump loop without a server.)
 */
final class FakeDatabase {

  final AtomicInteger open = new AtomicInteger();
  final AtomicInteger maxOpen = new AtomicInteger();
  final AtomicInteger commits = new AtomicInteger();
  final AtomicInteger rollbacks = new AtomicInteger();
  final AtomicInteger aborts = new AtomicInteger();
  final AtomicInteger connectionAttempts = new AtomicInteger();
  volatile boolean down;

  DataSource dataSource() {
    return (DataSource)
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "getConnection":
                  return connect();
                case "getLogWriter":
                  return (PrintWriter) null;
                case "getParentLogger":
                  return Logger.getGlobal();
                case "unwrap":
                  throw new SQLException("not a wrapper");
                case "isWrapperFor":
                  return false;
                case "toString":
                  return "FakeDataSource";
                case "hashCode":
                  return System.identityHashCode(proxy);
                case "equals":
                  return proxy == args[0];
                default:
                  return null;
              }
            });
  }

  private Connection connect() throws SQLException {
    connectionAttempts.incrementAndGet();
    if (down) {
      throw new SQLException("Connection to localhost:5432 refused", "08001");
    }
    int now = open.incrementAndGet();
    maxOpen.accumulateAndGet(now, Math::max);
    FakeConnection c = new FakeConnection(this);
    return (Connection)
        Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class}, c);
  }

  /** The fake behind a connection proxy. */
  static FakeConnection of(Connection c) {
    if (Proxy.getInvocationHandler(c) instanceof HandlerConnection lazy) {
      // A handler's connection: touching the fake counts as a statement, as SQL would.
      try {
        lazy.beforeStatement();
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
      return of(lazy.target());
    }
    return (FakeConnection) Proxy.getInvocationHandler(c);
  }

  /** One connection: a journal of effects plus hooks that run when its transaction ends. */
  static final class FakeConnection implements InvocationHandler {
    private final FakeDatabase db;
    private final List<Runnable> journal = new ArrayList<>();
    private final List<Runnable> onEnd = new ArrayList<>();
    private boolean closed;
    private volatile boolean aborted;

    FakeConnection(FakeDatabase db) {
      this.db = db;
    }

    /** Records an effect that happens only if the transaction commits. */
    synchronized void write(Runnable effect) throws SQLException {
      check();
      journal.add(effect);
    }

    /** Runs {@code hook} when the transaction ends, committed or not (releases "row locks"). */
    synchronized void onEnd(Runnable hook) {
      onEnd.add(hook);
    }

    private void check() throws SQLException {
      if (aborted) {
        throw new SQLException("An I/O error occurred while sending to the backend.", "08006");
      }
      if (closed) {
        throw new SQLException("This connection has been closed.", "08003");
      }
    }

    private void end() {
      journal.clear();
      onEnd.forEach(Runnable::run);
      onEnd.clear();
    }

    @Override
    public synchronized Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      switch (method.getName()) {
        case "setAutoCommit":
        case "releaseSavepoint":
          check();
          return null;
        case "getAutoCommit":
          return false;
        case "setSavepoint":
          check();
          int mark = journal.size();
          return new Savepoint() {
            @Override
            public int getSavepointId() {
              return mark;
            }

            @Override
            public String getSavepointName() {
              return "sp" + mark;
            }
          };
        case "rollback":
          check();
          if (args == null) {
            db.rollbacks.incrementAndGet();
            end();
          } else {
            int to = ((Savepoint) args[0]).getSavepointId();
            journal.subList(to, journal.size()).clear();
          }
          return null;
        case "commit":
          check();
          new ArrayList<>(journal).forEach(Runnable::run);
          db.commits.incrementAndGet();
          end();
          return null;
        case "close":
          if (!closed) {
            closed = true;
            if (!journal.isEmpty() || !onEnd.isEmpty()) {
              db.rollbacks.incrementAndGet();
            }
            end();
            db.open.decrementAndGet();
          }
          return null;
        case "abort":
          aborted = true;
          db.aborts.incrementAndGet();
          end();
          return null;
        case "isClosed":
          return closed;
        case "unwrap":
          return this;
        case "isWrapperFor":
          return true;
        case "toString":
          return "FakeConnection";
        case "hashCode":
          return System.identityHashCode(proxy);
        case "equals":
          return proxy == args[0];
        default:
          throw new UnsupportedOperationException("FakeConnection." + method.getName());
      }
    }
  }
}
