package org.messagepump.balancer.internal;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Limits;
import org.messagepump.core.spi.DatabaseClock;

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
    return claim(rs, group, key, rotation, id, failures, first, 0);
  }

  /**
   * As above; column {@code micros} (when not 0) holds received_at as {@link #micros} renders it,
   * read instead of the timestamp when it is not null.
   */
  static AcquiredMessage claim(
      ResultSet rs,
      String group,
      String key,
      long rotation,
      long id,
      int failures,
      int first,
      int micros) {
    byte[] content = null;
    String properties = null;
    OffsetDateTime received = null;
    int attempts = 0;
    String problem;
    try {
      content = rs.getBytes(first);
      properties = rs.getString(first + 1);
      received = micros == 0 ? null : utc(rs, micros);
      if (received == null) {
        received = rs.getObject(first + 2, OffsetDateTime.class);
      }
      attempts = rs.getInt(first + 3);
      problem = problem(content, properties, received);
    } catch (SQLException | RuntimeException e) {
      // The exception's message may quote the stored value: only its type is kept.
      problem = "its columns cannot be read (" + e.getClass().getSimpleName() + ")";
    }
    AcquiredMessage.Stored stored = null;
    if (problem != null) {
      stored = stored(rs, first);
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
        problem,
        stored);
  }

  /**
   * Content, properties and received_at of the current row as the database gave them (the two
   * latter as text, which the PostgreSQL driver hands out for any column), or null when even these
   * cannot be read.
   */
  private static AcquiredMessage.Stored stored(ResultSet rs, int first) {
    try {
      return new AcquiredMessage.Stored(
          rs.getBytes(first), rs.getString(first + 1), rs.getString(first + 2));
    } catch (SQLException | RuntimeException e) {
      return null;
    }
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
   * A timestamp as microseconds since the epoch, a {@code bigint}; null outside {@link
   * Limits#MIN_INSTANT} .. {@link Limits#MAX_INSTANT} (infinity included), where the caller reads
   * the timestamp itself and judges it. A {@code bigint} is read from the wire as it is, where
   * pgjdbc builds a {@code TimestampUtils} and a {@code GregorianCalendar} for every result set it
   * parses a {@code timestamptz} of, a visible part of a delivery's CPU time. The bounds are
   * constants of the code, written as integers.
   */
  static Field<Long> micros(Field<OffsetDateTime> timestamp) {
    return DSL.field(
        "case when extract(epoch from {0}) between {1} and {2}"
            + " then (extract(epoch from {0}) * 1000000)::bigint end",
        SQLDataType.BIGINT,
        timestamp,
        DSL.inline(Limits.MIN_INSTANT.getEpochSecond()),
        DSL.inline(Limits.MAX_INSTANT.getEpochSecond()));
  }

  /**
   * The database clock as microseconds since the epoch ({@link DatabaseClock#nowMicros}), for a
   * message's age only: it may be a microsecond off after 2041, which an age does not notice. A
   * stored time ({@link #micros}) is read exactly, since it is written back with a message that is
   * kept.
   */
  static Field<Long> clockMicros() {
    return DatabaseClock.nowMicros();
  }

  /** Column {@code column} of {@code rs} (as {@link #micros} renders it) in UTC, or null. */
  static OffsetDateTime utc(ResultSet rs, int column) throws SQLException {
    long us = rs.getLong(column);
    if (rs.wasNull()) {
      return null;
    }
    return Instant.ofEpochSecond(
            Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000)
        .atOffset(ZoneOffset.UTC);
  }

  /**
   * The age of a removed message from columns {@code received} to {@code now} of {@code rs}, both
   * as {@link #micros} renders them; zero when either is null or the difference is negative or does
   * not fit a timer.
   */
  static Duration ageMicros(ResultSet rs, int received, int now) {
    try {
      long from = rs.getLong(received);
      if (rs.wasNull()) {
        return Duration.ZERO;
      }
      long to = rs.getLong(now);
      if (rs.wasNull() || from > to) {
        return Duration.ZERO;
      }
      Duration d = Duration.ofNanos(Math.multiplyExact(to - from, 1000L));
      return d.compareTo(Limits.MAX_DELAY) > 0 ? Duration.ZERO : d;
    } catch (SQLException | RuntimeException e) {
      return Duration.ZERO;
    }
  }
}
