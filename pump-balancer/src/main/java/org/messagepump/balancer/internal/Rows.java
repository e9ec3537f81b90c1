package org.messagepump.balancer.internal;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.messagepump.core.Limits;

/**
 * Reads stored messages defensively: one row whose columns cannot be read (a value written around
 * the API, a dropped constraint) becomes a claim with a {@link AcquiredMessage#problem()} instead
 * of failing the acquisition of every other row. The pump then counts a failure on it at each
 * attempt and parks its key at {@code maxFailures}, like an undecodable payload.
 */
final class Rows {

  private Rows() {}

  /**
   * The claim of the current row of {@code rs}, whose columns from {@code first} on are content,
   * properties, received_at and attempts.
   */
  static AcquiredMessage claim(
      ResultSet rs, String group, String key, long rotation, long id, int failures, int first) {
    byte[] content = null;
    String properties = null;
    OffsetDateTime received = null;
    int attempts = 0;
    String problem;
    try {
      content = rs.getBytes(first);
      properties = rs.getString(first + 1);
      received = rs.getObject(first + 2, OffsetDateTime.class);
      attempts = rs.getInt(first + 3);
      problem = problem(content, properties, received);
    } catch (SQLException | RuntimeException e) {
      // The exception's message may quote the stored value: only its type is kept.
      problem = "its columns cannot be read (" + e.getClass().getSimpleName() + ")";
    }
    if (problem != null) {
      content = new byte[0];
      properties = "{}";
      received = OffsetDateTime.now();
    }
    return new AcquiredMessage(
        group,
        key,
        rotation,
        id,
        content,
        properties,
        received,
        attempts,
        failures,
        UUID.randomUUID(),
        problem);
  }

  /** What is wrong with the columns of a stored message, or null. Never quotes the data. */
  static String problem(byte[] content, String properties, OffsetDateTime received) {
    if (content == null) {
      return "its content is null";
    }
    if (properties == null) {
      return "its properties are null";
    }
    String json = Json.storedProblem(properties);
    if (json != null) {
      return "its properties " + json;
    }
    if (received == null) {
      return "its received_at is null";
    }
    Instant at = received.toInstant();
    if (at.isBefore(Limits.MIN_INSTANT) || at.isAfter(Limits.MAX_INSTANT)) {
      return "its received_at is outside " + Limits.MIN_INSTANT + " .. " + Limits.MAX_INSTANT;
    }
    return null;
  }

  /**
   * The age of a removed message: column {@code received} to column {@code now} of {@code rs}; zero
   * when either cannot be read or the difference does not fit a timer.
   */
  static Duration age(ResultSet rs, int received, int now) {
    try {
      OffsetDateTime from = rs.getObject(received, OffsetDateTime.class);
      OffsetDateTime to = rs.getObject(now, OffsetDateTime.class);
      if (from == null || to == null || from.isAfter(to)) {
        return Duration.ZERO;
      }
      Duration d = Duration.between(from, to);
      return d.compareTo(Limits.MAX_DELAY) > 0 ? Duration.ZERO : d;
    } catch (SQLException | RuntimeException e) {
      return Duration.ZERO;
    }
  }
}
