package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.rand;
import static org.messagepump.eventstream.internal.EventTables.CHANGED_XID;
import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.NEXT_OFFSET;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.Table;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.messagepump.core.Limits;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.Tx;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.Inputs;

/**
 * Appends events: validates and encodes them, takes a stream row lock, assigns gap-free offsets
 * under it and inserts the events, all in the caller's transaction.
 *
 * <p>Writers lock stream rows {@code FOR NO KEY UPDATE}: it excludes other writers but not the
 * {@code KEY SHARE} lock a reader's checkpoint insert takes through its foreign key, so readers
 * never wait for a writer's open transaction. Because a stream's offsets are assigned and committed
 * under its row lock, the committed events of a stream always form a prefix {@code 0 .. next_offset
 * - 1}: a reader that sees {@code next_offset = n} has seen every event below {@code n}, and an
 * event still uncommitted has an offset at or above it.
 *
 * <p>The events are inserted with one fixed statement whose per-event values are bound as three
 * arrays ({@code unnest(?::uuid[], ?::text[], ?::bytea[])}), in chunks: however many events one
 * append holds, no statement has more than a handful of bind parameters (jOOQ would otherwise
 * inline every value into the SQL text past 65,535 parameters) and none carries more than {@link
 * #CHUNK_BYTES} of payload.
 */
public final class StreamWriter {

  /** Most events one insert statement carries. */
  static final int CHUNK_EVENTS = 10_000;

  /** Most payload bytes one insert statement carries (a larger single event goes alone). */
  static final long CHUNK_BYTES = 32L << 20;

  /** One event, validated and encoded, not yet written. */
  public record Encoded(UUID messageId, String type, byte[] payload) {}

  /** Metadata validated against the limits, with its headers as JSON. */
  public record Meta(String correlationId, String causationId, String headersJson) {}

  /**
   * Where an append put its events: the stream, the first offset, the stream's next offset after it
   * and the events' message ids in order.
   */
  public record Appended(
      long streamId, long firstOffset, long nextOffset, List<String> messageIds) {}

  private static final ObjectMapper JSON = new ObjectMapper();

  private final MessageCodec codec;
  private final Limits limits;
  private final Table<Record> streams;
  private final String channel;
  private final String insertEvents;
  private final String upsertTypes;

  /** A writer to {@code tables} encoding with {@code codec}, checking input against limits. */
  public StreamWriter(MessageCodec codec, EventTables tables, Limits limits) {
    this.codec = codec;
    this.limits = limits;
    this.streams = tables.streams;
    this.channel = tables.wakeChannel();
    // Written once per store; the schema is a validated identifier, quoted by jOOQ.
    this.insertEvents =
        "INSERT INTO "
            + tables.quoted("events")
            + " (message_id, stream_id, stream_offset, type, correlation_id, causation_id,"
            + " headers, payload)"
            + " SELECT e.id, ?::bigint, ?::bigint + e.n - 1, e.type, ?::text, ?::text, ?::jsonb,"
            + " e.payload"
            + " FROM unnest(?::uuid[], ?::text[], ?::bytea[]) WITH ORDINALITY AS e(id, type,"
            + " payload, n)";
    this.upsertTypes =
        "INSERT INTO "
            + tables.quoted("stream_types")
            + " AS st (stream_id, type, latest_offset)"
            + " SELECT ?::bigint, t.type, t.latest FROM unnest(?::text[], ?::bigint[]) AS t(type,"
            + " latest)"
            + " ON CONFLICT (stream_id, type)"
            + " DO UPDATE SET latest_offset = greatest(st.latest_offset, excluded.latest_offset)";
  }

  /**
   * Validates and encodes every event before anything is written: a null list or event is a {@link
   * NullPointerException}, anything else bad an {@link IllegalArgumentException}.
   */
  public List<Encoded> encode(List<?> events) {
    Objects.requireNonNull(events, "events must not be null");
    if (events.isEmpty()) {
      throw new IllegalArgumentException("events must not be empty");
    }
    List<Encoded> encoded = new ArrayList<>(events.size());
    for (int i = 0; i < events.size(); i++) {
      Object event = events.get(i);
      if (event == null) {
        throw new NullPointerException("events[" + i + "] is null");
      }
      String type;
      byte[] payload;
      try {
        type = codec.typeOf(event.getClass());
        payload = codec.encode(event);
      } catch (UnknownMessageTypeException e) {
        throw new IllegalArgumentException(
            "events[" + i + "] has an unknown type: " + e.getMessage(), e);
      }
      Inputs.key("type name of events[" + i + "]", type);
      if (payload == null) {
        throw new IllegalArgumentException("events[" + i + "] encoded to null");
      }
      Inputs.payload("payload of events[" + i + "]", payload, limits);
      encoded.add(new Encoded(UUID.randomUUID(), type, payload));
    }
    return encoded;
  }

  /** Validates an append's metadata against the limits; bad input is an IAE. */
  public Meta meta(String correlationId, String causationId, Map<String, String> headers) {
    String correlation = Inputs.optionalKey("correlationId", correlationId);
    String causation = Inputs.optionalKey("causationId", causationId);
    Map<String, String> checked = Inputs.headers(headers, limits);
    String json;
    try {
      json = JSON.writeValueAsString(checked);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("headers cannot be written as JSON", e);
    }
    return new Meta(correlation, causation, json);
  }

  /**
   * Locks a stream for appending: one no other transaction holds (without waiting); if all are
   * held, waits for one only when an empty stream exists, otherwise creates a new stream.
   */
  public long lockAnyStream(DSLContext dsl) {
    Record1<Long> free =
        dsl.select(ID)
            .from(streams)
            .orderBy(NEXT_OFFSET, rand())
            .limit(1)
            .forNoKeyUpdate()
            .skipLocked()
            .fetchOne();
    if (free != null) {
      return free.value1();
    }
    if (dsl.fetchExists(dsl.selectOne().from(streams).where(NEXT_OFFSET.eq(0L)))) {
      // Another empty stream would only add a stream to read; wait for a held one instead.
      Record1<Long> held =
          dsl.select(ID)
              .from(streams)
              .orderBy(NEXT_OFFSET, rand())
              .limit(1)
              .forNoKeyUpdate()
              .fetchOne();
      if (held != null) {
        return held.value1();
      }
    }
    return createStream(dsl);
  }

  /** Creates an empty stream (locked by this transaction until it ends) and returns its id. */
  public long createStream(DSLContext dsl) {
    return dsl.insertInto(streams).defaultValues().returningResult(ID).fetchOne().value1();
  }

  /**
   * Locks a given stream, waiting for other writers, and returns its next offset (for the caller's
   * optimistic-concurrency check).
   */
  public long lockStream(DSLContext dsl, long streamId) {
    Record1<Long> row =
        dsl.select(NEXT_OFFSET).from(streams).where(ID.eq(streamId)).forNoKeyUpdate().fetchOne();
    if (row == null) {
      throw new IllegalArgumentException("stream " + streamId + " does not exist");
    }
    return row.value1();
  }

  /** Appends to a stream this transaction has locked: assigns offsets and inserts the events. */
  public Appended write(Tx tx, long streamId, List<Encoded> events, Meta meta) {
    DSLContext dsl = tx.dsl();
    int n = events.size();
    long next =
        dsl.update(streams)
            .set(NEXT_OFFSET, NEXT_OFFSET.plus((long) n))
            .set(CHANGED_XID, EventTables.currentXid())
            .where(ID.eq(streamId))
            .returningResult(NEXT_OFFSET)
            .fetchOne()
            .value1();
    long first = next - n;
    Map<String, Long> latestByType = new LinkedHashMap<>();
    List<String> ids = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Encoded e = events.get(i);
      latestByType.put(e.type(), first + i);
      ids.add(e.messageId().toString());
    }
    try {
      Connection c = tx.connection();
      insertEvents(c, streamId, first, events, meta);
      upsertTypes(c, streamId, latestByType);
    } catch (SQLException e) {
      throw new DataAccessException("inserting events into stream " + streamId, e);
    }
    // Wake idle event pumps in every process; PostgreSQL folds the signals of one transaction.
    dsl.select(DSL.function("pg_notify", Object.class, DSL.val(channel), DSL.val(""))).fetch();
    return new Appended(streamId, first, next, ids);
  }

  private void insertEvents(
      Connection c, long streamId, long first, List<Encoded> events, Meta meta)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(insertEvents)) {
      int from = 0;
      while (from < events.size()) {
        int to = from;
        long bytes = 0;
        while (to < events.size()
            && to - from < CHUNK_EVENTS
            && (to == from || bytes + events.get(to).payload().length <= CHUNK_BYTES)) {
          bytes += events.get(to).payload().length;
          to++;
        }
        int size = to - from;
        UUID[] ids = new UUID[size];
        String[] types = new String[size];
        byte[][] payloads = new byte[size][];
        for (int i = 0; i < size; i++) {
          Encoded e = events.get(from + i);
          ids[i] = e.messageId();
          types[i] = e.type();
          payloads[i] = e.payload();
        }
        ps.setLong(1, streamId);
        ps.setLong(2, first + from);
        ps.setString(3, meta.correlationId());
        ps.setString(4, meta.causationId());
        ps.setString(5, meta.headersJson());
        Array idArray = c.createArrayOf("uuid", ids);
        Array typeArray = c.createArrayOf("text", types);
        Array payloadArray = c.createArrayOf("bytea", payloads);
        ps.setArray(6, idArray);
        ps.setArray(7, typeArray);
        ps.setArray(8, payloadArray);
        int inserted = ps.executeUpdate();
        if (inserted != size) {
          throw new IllegalStateException(
              "inserted " + inserted + " of " + size + " events into stream " + streamId);
        }
        idArray.free();
        typeArray.free();
        payloadArray.free();
        from = to;
      }
    }
  }

  private void upsertTypes(Connection c, long streamId, Map<String, Long> latestByType)
      throws SQLException {
    List<Map.Entry<String, Long>> all = new ArrayList<>(latestByType.entrySet());
    try (PreparedStatement ps = c.prepareStatement(upsertTypes)) {
      for (int from = 0; from < all.size(); from += CHUNK_EVENTS) {
        int size = Math.min(CHUNK_EVENTS, all.size() - from);
        String[] types = new String[size];
        Long[] latest = new Long[size];
        for (int i = 0; i < size; i++) {
          types[i] = all.get(from + i).getKey();
          latest[i] = all.get(from + i).getValue();
        }
        ps.setLong(1, streamId);
        Array typeArray = c.createArrayOf("text", types);
        Array latestArray = c.createArrayOf("bigint", latest);
        ps.setArray(2, typeArray);
        ps.setArray(3, latestArray);
        ps.executeUpdate();
        typeArray.free();
        latestArray.free();
      }
    }
  }
}
