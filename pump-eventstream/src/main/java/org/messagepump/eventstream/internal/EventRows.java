package org.messagepump.eventstream.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Envelope;
import org.messagepump.core.UndecodableMessageException;

/**
 * Maps rows of {@code <schema>.events} to {@link Row}s (the public package makes its stored events
 * of them). Headers are read as text and parsed per row, so a row whose headers are not a JSON
 * object of strings becomes a {@link Row} with a problem (handled as undecodable) instead of
 * failing the read of every row.
 */
public final class EventRows {

  /**
   * An event as read: its stream, offset and envelope, with what is wrong with its stored envelope,
   * or null when nothing is.
   */
  public record Row(long streamId, long offset, Envelope envelope, String problem) {}

  private static final ObjectMapper JSON = new ObjectMapper();

  /** The headers, read as text and parsed per row, so a bad row cannot fail a whole read. */
  private static final Field<String> HEADERS_TEXT =
      EventTables.HEADERS.cast(SQLDataType.CLOB).as(EventTables.HEADERS.getName());

  /** The columns every event read selects. */
  public static final List<Field<?>> COLUMNS =
      List.of(
          EventTables.MESSAGE_ID,
          EventTables.STREAM_ID,
          EventTables.STREAM_OFFSET,
          EventTables.TYPE,
          EventTables.CORRELATION_ID,
          EventTables.CAUSATION_ID,
          HEADERS_TEXT,
          EventTables.PAYLOAD,
          EventTables.RECORDED_AT);

  private EventRows() {}

  /**
   * The columns of {@code table}'s events that {@link #toRow(java.sql.ResultSet, int, long)} reads,
   * in its order: message id, offset, type, correlation id, causation id, headers as text, payload,
   * recorded-at in microseconds since the epoch.
   */
  public static List<Field<?>> jdbcColumns(org.jooq.Table<?> table) {
    return List.of(
        EventTables.column(table, EventTables.MESSAGE_ID),
        EventTables.column(table, EventTables.STREAM_OFFSET),
        EventTables.column(table, EventTables.TYPE),
        EventTables.column(table, EventTables.CORRELATION_ID),
        EventTables.column(table, EventTables.CAUSATION_ID),
        EventTables.column(table, EventTables.HEADERS).cast(SQLDataType.CLOB),
        EventTables.column(table, EventTables.PAYLOAD),
        DSL.field(
            "(extract(epoch from {0}) * 1000000)::bigint",
            SQLDataType.BIGINT, EventTables.column(table, EventTables.RECORDED_AT)));
  }

  /**
   * The event in a row selected with {@link #columns()}, readable.
   *
   * @throws UndecodableMessageException when its stored headers cannot be read
   */
  public static Row toReadableRow(Record r) {
    Row row = toRow(r);
    if (row.problem() != null) {
      throw new UndecodableMessageException(row.problem(), null);
    }
    return row;
  }

  /** The event in a row selected with {@link #COLUMNS}; never fails on its headers. */
  public static Row toRow(Record r) {
    return row(
        r.get(EventTables.MESSAGE_ID),
        r.get(EventTables.STREAM_ID),
        r.get(EventTables.STREAM_OFFSET),
        r.get(EventTables.TYPE),
        r.get(EventTables.CORRELATION_ID),
        r.get(EventTables.CAUSATION_ID),
        r.get(HEADERS_TEXT),
        r.get(EventTables.PAYLOAD),
        instant(r.get(EventTables.RECORDED_AT)));
  }

  /**
   * The event in columns {@code first} … {@code first + 7} of a JDBC row: message id, offset, type,
   * correlation id, causation id, headers (as text), payload, recorded-at in microseconds since the
   * epoch (a bigint: pgjdbc builds a calendar per result set to parse a timestamp, a visible cost
   * per delivery at batch size 1; the stream is given).
   */
  public static Row toRow(java.sql.ResultSet rs, int first, long streamId)
      throws java.sql.SQLException {
    return row(
        rs.getObject(first, java.util.UUID.class),
        streamId,
        rs.getLong(first + 1),
        rs.getString(first + 2),
        rs.getString(first + 3),
        rs.getString(first + 4),
        rs.getString(first + 5),
        rs.getBytes(first + 6),
        micros(rs.getLong(first + 7), rs.wasNull()));
  }

  private static Row row(
      java.util.UUID messageId,
      long streamId,
      long offset,
      String type,
      String correlationId,
      String causationId,
      String headersJson,
      byte[] payload,
      Instant recordedAt) {
    String problem = null;
    Map<String, String> headers;
    try {
      headers = headers(headersJson);
    } catch (IllegalStateException e) {
      // The message names the shape only: stored data never goes into exception messages.
      problem =
          "event at offset "
              + offset
              + " of stream "
              + streamId
              + ": stored headers are unreadable ("
              + e.getMessage()
              + ")";
      headers = Map.of();
    }
    Envelope envelope =
        new Envelope(
            messageId.toString(), type, correlationId, causationId, recordedAt, headers, payload);
    return new Row(streamId, offset, envelope, problem);
  }

  /** Parses stored headers; an {@link IllegalStateException} naming the shape when they are bad. */
  private static Map<String, String> headers(String json) {
    if (json == null || json.equals("{}")) {
      return Map.of(); // most events have no headers: no parse (PostgreSQL prints jsonb's {} so)
    }
    JsonNode node;
    try {
      node = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("not valid JSON");
    }
    if (node == null || node.isNull() || node.isMissingNode()) {
      return Map.of();
    }
    if (!node.isObject()) {
      throw new IllegalStateException("a JSON " + node.getNodeType() + ", not an object");
    }
    Map<String, String> m = new LinkedHashMap<>();
    Iterator<Map.Entry<String, JsonNode>> it = node.fields();
    int i = 0;
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      if (!e.getValue().isTextual()) {
        throw new IllegalStateException(
            "value " + i + " is a JSON " + e.getValue().getNodeType() + ", not a string");
      }
      m.put(e.getKey(), e.getValue().textValue());
      i++;
    }
    return m;
  }

  private static Instant micros(long micros, boolean isNull) {
    return isNull ? null : Instant.EPOCH.plus(micros, java.time.temporal.ChronoUnit.MICROS);
  }

  static Instant instant(OffsetDateTime t) {
    return t == null ? null : t.toInstant();
  }
}
