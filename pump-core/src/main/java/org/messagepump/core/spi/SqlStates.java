package org.messagepump.core.spi;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;

/**
 * The one SQLState classifier: which database errors are worth a quick retry, which mean the
 * connection is gone, and which are permanent.
 */
public final class SqlStates {

  /** What an error means for the delivery that hit it. */
  public enum Kind {
    /** Serialization failure (40001), deadlock (40P01), lock timeout (55P03): retry soon. */
    TRANSIENT,
    /** Connection exception (08*), operator intervention (57P0x): the transaction is gone. */
    CONNECTION,
    /** Anything else. */
    PERMANENT
  }

  private SqlStates() {}

  /** Classifies a throwable by the first {@link SQLException} in its cause chain. */
  public static Kind classify(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        Kind k = classify(sql.getSQLState());
        if (k != Kind.PERMANENT) {
          return k;
        }
        if (sql instanceof SQLTransientConnectionException) {
          return Kind.CONNECTION;
        }
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return Kind.PERMANENT;
  }

  /** Classifies one SQLState (null is permanent). */
  public static Kind classify(String sqlState) {
    if (sqlState == null) {
      return Kind.PERMANENT;
    }
    if (sqlState.equals("40001") || sqlState.equals("40P01") || sqlState.equals("55P03")) {
      return Kind.TRANSIENT;
    }
    if (sqlState.startsWith("08") || sqlState.startsWith("57P")) {
      return Kind.CONNECTION;
    }
    return Kind.PERMANENT;
  }
}
