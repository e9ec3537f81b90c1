package org.messagepump.core.engine;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.Set;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * The connection a handler sees. Two jobs:
 *
 * <ul>
 *   <li><b>Lazy savepoint.</b> It sets the delivery's savepoint just before the first statement the
 *       handler (or the driver's {@code handle}) sends, not before every delivery. A handler that
 *       does not touch the database then costs no {@code SAVEPOINT} round trip. Measured on the
 *       command drain with a no-op handler: the savepoint was one of three round trips per
 *       delivery.
 *   <li><b>Guard.</b> The pump owns the transaction. {@code commit}, {@code rollback()}, {@code
 *       setAutoCommit}, {@code close}, {@code abort}, isolation and read-only changes, and {@code
 *       unwrap} throw {@link IllegalStateException} naming the rule: a handler that committed, then
 *       threw, lost its message; one that closed the connection made every commit fail.
 *   <li><b>Timeout.</b> Once the delivery's handler timeout has expired ({@link HandlerTimeouts}),
 *       every call through it fails with SQLState 57014, so a handler that ignores the interrupt
 *       cannot start new work on the pump's connection.
 * </ul>
 *
 * <p>A dynamic proxy rather than a hand-written delegate: {@link Connection} has some fifty methods
 * and only a dozen differ. Statements must go through this connection (or the {@code Tx} built on
 * it) to be covered. A handler that reaches the physical connection some other way (say {@code
 * Statement.getConnection()}) and ends the transaction is caught at its next statement through this
 * connection, or after it returns: {@link #brokenTransaction()} reads the JDBC driver's transaction
 * state, which costs no round trip.
 */
final class HandlerConnection implements InvocationHandler {

  /** The methods that send SQL to the server, or create a statement that will. */
  private static final Set<String> STATEMENTS =
      Set.of("createStatement", "prepareStatement", "prepareCall", "setSavepoint");

  /** The methods that would end or change the pump's transaction, or escape the guard. */
  private static final Set<String> REFUSED =
      Set.of(
          "commit",
          "setAutoCommit",
          "close",
          "abort",
          "setTransactionIsolation",
          "setReadOnly",
          "unwrap");

  private final Connection target;
  private final Connection proxy;
  // Taken while the savepoint is set and while a timeout refuses the connection, so that the
  // timeout's cancel is sent only once the delivery's savepoint exists (see refuse()).
  private final Object gate = new Object();
  private Savepoint savepoint;
  private boolean armed;
  // Why the connection is refused to the handler (its timeout expired), or null.
  private volatile String refused;
  private BaseConnection pg;
  private boolean pgLookedUp;
  private String broken;

  HandlerConnection(Connection target) {
    this.target = target;
    this.proxy =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, this);
  }

  /** The connection to hand to the delivery's handler. */
  Connection connection() {
    return proxy;
  }

  /** Starts a delivery: its savepoint is set at its first statement. */
  void arm() {
    savepoint = null;
    broken = null;
    refused = null;
    armed = true;
  }

  /**
   * Refuses every further call of the handler's through this connection, with {@code reason} as the
   * error (SQLState 57014, query canceled). Returns true when the delivery's savepoint is set: only
   * then may a statement of the handler's be running on the connection, and only then is cancelling
   * it safe, because whatever the cancel aborts the pump undoes by rolling back to that savepoint.
   * Called by the timeout's thread.
   */
  boolean refuse(String reason) {
    synchronized (gate) {
      refused = reason;
      return savepoint != null;
    }
  }

  /** Ends the delivery's window: statements of the pump's own bookkeeping need no savepoint. */
  void disarm() {
    armed = false;
  }

  /** The delivery's savepoint, or null when its handler sent no statement. */
  Savepoint savepoint() {
    return savepoint;
  }

  @Override
  public Object invoke(Object self, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    if (method.getDeclaringClass() == Object.class) {
      return switch (name) {
        case "equals" -> self == args[0];
        case "hashCode" -> System.identityHashCode(self);
        case "toString" -> "HandlerConnection[" + target + "]";
        default -> method.invoke(target, args);
      };
    }
    String refusal = refused;
    if (refusal != null && !name.equals("isClosed")) {
      throw new SQLException(refusal, "57014");
    }
    if (REFUSED.contains(name) || (name.equals("rollback") && (args == null || args.length == 0))) {
      throw new IllegalStateException(
          "Connection."
              + name
              + "() is refused inside a handler: the pump owns the delivery's transaction and"
              + " commits or rolls back the whole batch. Throw to fail the delivery; use a"
              + " savepoint or tx.dsl().transaction(...) for a nested unit of work");
    }
    if (name.equals("isWrapperFor")) {
      return false;
    }
    if (STATEMENTS.contains(name)) {
      if (armed) {
        String broken = brokenTransaction();
        if (broken != null) {
          // The transaction was ended behind the guard's back; a statement now would run in a new
          // transaction the pump knows nothing of.
          this.broken = broken;
          throw new IllegalStateException(broken + "; no statement may follow");
        }
      }
      beforeStatement();
    }
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** Sets the delivery's savepoint if it is armed and not set yet. */
  void beforeStatement() throws SQLException {
    if (armed && savepoint == null) {
      synchronized (gate) {
        String refusal = refused;
        if (refusal != null) {
          throw new SQLException(refusal, "57014");
        }
        savepoint = target.setSavepoint();
      }
    }
  }

  /** The connection behind the proxy. */
  Connection target() {
    return target;
  }

  /**
   * Rolls back to the delivery's savepoint, or sets one when its handler sent nothing, and returns
   * it: the pump's own record of the outcome can then be undone and tried again in a plainer form.
   */
  Savepoint rollbackOrMark() throws SQLException {
    if (savepoint != null) {
      target.rollback(savepoint);
    } else {
      savepoint = target.setSavepoint();
    }
    return savepoint;
  }

  /**
   * Null while the pump's transaction is intact; otherwise what the handler did to it (closed the
   * connection, or ended the transaction). Reads the JDBC driver's state: no round trip.
   */
  String brokenTransaction() {
    if (broken != null) {
      return broken;
    }
    try {
      if (target.isClosed()) {
        return "the handler closed the pump's connection";
      }
    } catch (SQLException e) {
      return "the pump's connection is unusable after the handler: " + e.getMessage();
    }
    BaseConnection c = pg();
    if (c != null && c.getTransactionState() == TransactionState.IDLE) {
      return "the handler ended the pump's transaction (a commit or rollback on the physical"
          + " connection)";
    }
    return null;
  }

  /** True when the transaction is aborted by an error (the handler caught it and returned). */
  boolean aborted() {
    BaseConnection c = pg();
    return c != null && c.getTransactionState() == TransactionState.FAILED;
  }

  private BaseConnection pg() {
    if (!pgLookedUp) {
      pgLookedUp = true;
      try {
        if (target.isWrapperFor(BaseConnection.class)) {
          pg = target.unwrap(BaseConnection.class);
        }
      } catch (SQLException | RuntimeException e) {
        pg = null; // not pgjdbc underneath (a test double): the checks are skipped
      }
    }
    return pg;
  }
}
