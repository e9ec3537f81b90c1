package org.messagepump.core;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.Set;

/**
 * The connection a handler sees: it sets the delivery's savepoint just before the first statement
 * the handler (or the driver's {@code handle}) sends, not before every delivery. A handler that
 * does not touch the database then costs no {@code SAVEPOINT} round trip, and one that does pays it
 * exactly as before; a failed delivery whose handler wrote nothing has nothing to roll back.
 *
 * <p>Measured on the command drain with a no-op handler: the savepoint was one of three round trips
 * per delivery. A dynamic proxy rather than a hand-written delegate: {@link Connection} has some
 * fifty methods and only the statement-creating ones differ.
 *
 * <p>Statements must go through this connection (or the {@code Tx} built on it) to be covered; a
 * handler that unwraps the driver's own connection class bypasses the savepoint.
 */
final class LazySavepoint implements InvocationHandler {

  /** The methods that send SQL to the server, or create a statement that will. */
  private static final Set<String> STATEMENTS =
      Set.of("createStatement", "prepareStatement", "prepareCall", "setSavepoint");

  private final Connection target;
  private final Connection proxy;
  private Savepoint savepoint;
  private boolean armed;

  LazySavepoint(Connection target) {
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
    armed = true;
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
    if (STATEMENTS.contains(name)) {
      beforeStatement();
    }
    if (method.getDeclaringClass() == Object.class) {
      return switch (name) {
        case "equals" -> self == args[0];
        case "hashCode" -> System.identityHashCode(self);
        case "toString" -> "LazySavepoint[" + target + "]";
        default -> method.invoke(target, args);
      };
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
      savepoint = target.setSavepoint();
    }
  }

  /** The connection behind the proxy. */
  Connection target() {
    return target;
  }

  /** Rolls back to the delivery's savepoint if one was set. */
  void rollback() throws SQLException {
    if (savepoint != null) {
      target.rollback(savepoint);
    }
  }
}
