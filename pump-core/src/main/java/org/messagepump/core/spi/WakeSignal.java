package org.messagepump.core.spi;

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

  /** Longest driver name in a wake channel ({@link #channel}). */
  public static final int MAX_DRIVER_LENGTH = 10;

  /**
   * The wake channel of a driver's tables in {@code schema}: {@code messagepump_<driver>_<schema>},
   * the one naming scheme of every driver, so that two drivers, or one driver in two schemas, never
   * share a channel, and every name fits PostgreSQL's 63-byte identifiers.
   *
   * @param driver the driver's short name: 1 to {@value #MAX_DRIVER_LENGTH} lower-case letters
   * @param schema a schema name as {@link Inputs#schema} accepts it
   * @throws IllegalArgumentException when either breaks its rule
   */
  public static String channel(String driver, String schema) {
    Objects.requireNonNull(driver, "driver");
    if (driver.isEmpty()
        || driver.length() > MAX_DRIVER_LENGTH
        || !driver.chars().allMatch(c -> c >= 'a' && c <= 'z')) {
      throw new IllegalArgumentException(
          "driver must be 1 to " + MAX_DRIVER_LENGTH + " lower-case letters");
    }
    return "messagepump_" + driver + "_" + Inputs.schema("schema", schema);
  }

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
