package org.messagepump.core.engine;

import java.sql.SQLException;
import java.util.Map;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Inputs;
import org.slf4j.MDC;

/**
 * What the engine writes into log lines: the pump's logger name, a throwable made into one bounded
 * line, the reason stored with a parked delivery, and the delivery's MDC keys. Log lines carry no
 * payload data and stay bounded per delivery.
 */
final class LogText {

  /**
   * The logger of the pump's engine (the dispatcher, the workers, the handler timeouts, the wake
   * listener, leases): one name, so that one logging rule covers the pump's own lines.
   */
  static final String LOGGER = "org.messagepump.core.engine.MessagePump";

  private LogText() {}

  /**
   * A throwable for a log line: its class and message, made printable and cut to length. Data the
   * parser quoted from a payload ({@link UndecodableMessageException#detail()}) is left out: it
   * goes to DEBUG only.
   */
  static String describe(Throwable t) {
    String m = t.getMessage();
    if (m != null && sqlException(t)) {
      // PostgreSQL's "Detail:" and "Where:" lines quote the row's values (a duplicate key, say):
      // data, which stays out of WARN lines. The stored reason keeps them.
      int nl = m.indexOf('\n');
      m = nl < 0 ? m : m.substring(0, nl);
    }
    return t.getClass().getSimpleName() + (m == null ? "" : ": " + oneLine(cut(m, 500)));
  }

  /**
   * A message for a single log line: line breaks shown as {@code " | "} (a PostgreSQL error's
   * "Detail:" line, or a handler's message forging log lines), other control characters replaced.
   */
  static String oneLine(String s) {
    return Inputs.reason(s.replace("\r\n", " | ").replace('\r', '\n').replace("\n", " | "))
        .replace('\t', ' ');
  }

  /** A throwable as the reason stored with a parked delivery: includes the parser's detail. */
  static String reason(Throwable t) {
    String m = t.getMessage();
    String d = t.getClass().getSimpleName() + (m == null ? "" : ": " + oneLine(cut(m, 1_500)));
    if (t instanceof UndecodableMessageException u && u.detail() != null) {
      d = d + ": " + u.detail();
    }
    return d;
  }

  /** The SQLState of the first SQL exception in {@code e}'s causes, else its class name. */
  static String sqlState(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s && s.getSQLState() != null) {
        return "SQLSTATE " + s.getSQLState();
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return e.getClass().getSimpleName();
  }

  /** Sets the delivery's MDC keys for the lines logged while it is handled or recorded. */
  static void putMdc(String pumpName, Delivery d) {
    MDC.put("pump", pumpName);
    MDC.put("messageId", d.messageId());
    MDC.put("messageType", d.messageType());
    MDC.put("attempt", Integer.toString(d.attempt()));
    for (Map.Entry<String, String> key : d.logKeys().entrySet()) {
      MDC.put(key.getKey(), key.getValue());
    }
  }

  /** Removes what {@link #putMdc} set. */
  static void clearMdc(Delivery d) {
    MDC.remove("pump");
    MDC.remove("messageId");
    MDC.remove("messageType");
    MDC.remove("attempt");
    for (String key : d.logKeys().keySet()) {
      MDC.remove(key);
    }
  }

  private static boolean sqlException(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SQLException) {
        return true;
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return false;
  }

  private static String cut(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "...";
  }
}
