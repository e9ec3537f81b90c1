package org.messagepump.spring.boot.internal;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;

/**
 * The delivery's connection as Hibernate's session sees it. Hibernate can only flush inside a
 * transaction of its own ({@code TransactionRequiredException} otherwise), and its resource-local
 * transaction begins with {@code setAutoCommit(false)} and ends with {@code commit()} or {@code
 * rollback()} on the connection, all three refused by the pump's guard. While {@link #owned} runs
 * (the binding beginning and ending the session's transaction, never user code), these three calls
 * are no-ops: the connection is already in the delivery's transaction, the pump commits the whole
 * batch later, and after a failure it rolls back to the delivery's savepoint. At any other time
 * every call, those three included, goes to the guarded connection, so a handler that reaches
 * Hibernate's transaction ({@code session.getTransaction().commit()}) is refused as with JDBC.
 *
 * <p>A dynamic proxy rather than a hand-written delegate: {@link Connection} has some fifty methods
 * and three differ; no library offers a delegating JDBC connection with hooks (Spring's
 * ConnectionProxy is an interface for proxies like this one).
 */
final class ParticipantConnection implements InvocationHandler {

  private final Connection target;
  private final Connection proxy;
  private boolean owned;

  ParticipantConnection(Connection target) {
    this.target = target;
    this.proxy =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, this);
  }

  /** The connection to give the session. */
  Connection connection() {
    return proxy;
  }

  /**
   * Runs {@code action} (a begin, commit or rollback of the session's transaction) as its owner.
   */
  void owned(Runnable action) {
    owned = true;
    try {
      action.run();
    } finally {
      owned = false;
    }
  }

  @Override
  public Object invoke(Object self, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    if (method.getDeclaringClass() == Object.class) {
      return switch (name) {
        case "equals" -> self == args[0];
        case "hashCode" -> System.identityHashCode(self);
        default -> "ParticipantConnection[" + target + "]";
      };
    }
    if (owned && isTransactionEnd(name, args)) {
      return null;
    }
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static boolean isTransactionEnd(String name, Object[] args) {
    boolean noArgs = args == null || args.length == 0;
    return (name.equals("commit") && noArgs)
        || (name.equals("rollback") && noArgs)
        || (name.equals("setAutoCommit") && Boolean.FALSE.equals(args[0]));
  }
}
