package org.messagepump.core;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Objects;

/**
 * Signals a driver's wake channel from a producer's transaction. PostgreSQL delivers the
 * notification at commit (none on rollback) and folds identical ones of one transaction into one,
 * so calling this once per enqueued message still notifies once per transaction.
 */
public final class WakeSignal {

  private WakeSignal() {}

  /**
   * Queues a notification on {@code channel}, delivered when the connection's transaction commits.
   */
  public static void send(Connection connection, String channel) throws SQLException {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(channel, "channel");
    try (PreparedStatement ps = connection.prepareStatement("SELECT pg_notify(?, '')")) {
      ps.setString(1, channel);
      ps.execute();
    }
  }
}
