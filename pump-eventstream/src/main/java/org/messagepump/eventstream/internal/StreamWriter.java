package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.rand;
import static org.messagepump.eventstream.internal.EventTables.CHANGED_XID;
import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.LATEST_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.NEXT_OFFSET;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.SelectForUpdateStep;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Limits;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.Tx;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.StatementCache;

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
 * arrays ({@code unnest(ids, types, payloads)}), in chunks: however many events one append holds,
 * no statement has more than a handful of bind parameters (one per value would be inlined by jOOQ
 * past 65,535) and none carries more than {@link #CHUNK_BYTES} of payload.
 *
 * <p>Every statement of an append is built by jOOQ over {@link EventTables} and rendered once per
 * store ({@link StatementCache#render}), then run through JDBC with every value bound: an append
 * builds and renders no query. A JDBC error is a jOOQ {@code DataAccessException}, as when jOOQ ran
 * the statements.
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

  private static final Param<Long> STREAM = StatementCache.parameter("stream", SQLDataType.BIGINT);
  private static final Param<Long> FIRST = StatementCache.parameter("first", SQLDataType.BIGINT);
  private static final Param<Long> COUNT = StatementCache.parameter("count", SQLDataType.BIGINT);
  private static final Param<String> CORRELATION =
      StatementCache.parameter("correlation", SQLDataType.CLOB);
  private static final Param<String> CAUSATION =
      StatementCache.parameter("causation", SQLDataType.CLOB);
  private static final Param<JSONB> HEADERS =
      StatementCache.parameter("headers", SQLDataType.JSONB);
  private static final Param<UUID[]> IDS =
      StatementCache.parameter("ids", SQLDataType.UUID.array());
  private static final Param<String[]> TYPES =
      StatementCache.parameter("types", SQLDataType.CLOB.array());
  private static final Param<byte[][]> PAYLOADS =
      StatementCache.parameter("payloads", SQLDataType.BLOB.array());
  private static final Param<Long[]> LATEST =
      StatementCache.parameter("latest", SQLDataType.BIGINT.array());
  private static final Param<String> CHANNEL =
      StatementCache.parameter("channel", SQLDataType.CLOB);
  private static final Param<String> SIGNAL = StatementCache.parameter("signal", SQLDataType.CLOB);

  /** The parameters of {@link #insertEvents(DSLContext, EventTables)}, in binding order. */
  private static final String[] INSERT_EVENTS = {
    "stream", "first", "correlation", "causation", "headers", "ids", "types", "payloads"
  };

  private final MessageCodec codec;
  private final Limits limits;
  private final String channel;
  private final StatementCache.Statement insertEvents;
  private final StatementCache.Statement upsertTypes;
  private final StatementCache.Statement freeStream;
  private final StatementCache.Statement anyEmptyStream;
  private final StatementCache.Statement heldStream;
  private final StatementCache.Statement createStream;
  private final StatementCache.Statement lockStream;
  private final StatementCache.Statement advance;
  private final StatementCache.Statement notify;

  /** A writer to {@code tables} encoding with {@code codec}, checking input against limits. */
  public StreamWriter(MessageCodec codec, EventTables tables, Limits limits) {
    this.codec = codec;
    this.limits = limits;
    this.channel = tables.wakeChannel();
    Table<Record> streams = tables.streams;
    // The per-append statements, built by jOOQ and rendered once per store; run through JDBC with
    // every value bound.
    this.insertEvents = StatementCache.render(dsl -> insertEvents(dsl, tables), INSERT_EVENTS);
    this.upsertTypes =
        StatementCache.render(dsl -> upsertTypes(dsl, tables), "stream", "types", "latest");
    this.freeStream =
        StatementCache.render(dsl -> anyStream(dsl, streams).forNoKeyUpdate().skipLocked());
    this.anyEmptyStream =
        StatementCache.render(
            dsl ->
                dsl.selectOne()
                    .where(
                        DSL.exists(
                            dsl.selectOne().from(streams).where(NEXT_OFFSET.eq(DSL.inline(0L))))));
    this.heldStream = StatementCache.render(dsl -> anyStream(dsl, streams).forNoKeyUpdate());
    this.createStream =
        StatementCache.render(dsl -> dsl.insertInto(streams).defaultValues().returningResult(ID));
    this.lockStream =
        StatementCache.render(
            dsl -> dsl.select(NEXT_OFFSET).from(streams).where(ID.eq(STREAM)).forNoKeyUpdate(),
            "stream");
    this.advance =
        StatementCache.render(
            dsl ->
                dsl.update(streams)
                    .set(NEXT_OFFSET, NEXT_OFFSET.plus(COUNT))
                    .set(CHANGED_XID, EventTables.currentXid())
                    .where(ID.eq(STREAM))
                    .returningResult(NEXT_OFFSET),
            "stream",
            "count");
    this.notify =
        StatementCache.render(
            dsl -> dsl.select(DSL.function("pg_notify", Object.class, CHANNEL, SIGNAL)),
            "channel",
            "signal");
  }

  /**
   * The events of one chunk, inserted from three bound arrays: {@code unnest(ids, types, payloads)
   * WITH ORDINALITY}, the offset of each the stream's first plus its ordinal.
   */
  private static Query insertEvents(DSLContext dsl, EventTables tables) {
    Field<UUID> id = DSL.field(DSL.name("e", "id"), SQLDataType.UUID);
    Field<String> type = DSL.field(DSL.name("e", "type"), SQLDataType.CLOB);
    Field<byte[]> payload = DSL.field(DSL.name("e", "payload"), SQLDataType.BLOB);
    Field<Long> n = DSL.field(DSL.name("e", "n"), SQLDataType.BIGINT);
    Table<?> e =
        StatementCache.rows(true, "e", List.of("id", "type", "payload", "n"), IDS, TYPES, PAYLOADS);
    return dsl.insertInto(
            tables.events,
            EventTables.MESSAGE_ID,
            EventTables.STREAM_ID,
            EventTables.STREAM_OFFSET,
            EventTables.TYPE,
            EventTables.CORRELATION_ID,
            EventTables.CAUSATION_ID,
            EventTables.HEADERS,
            EventTables.PAYLOAD)
        .select(
            dsl.select(
                    id,
                    STREAM,
                    FIRST.plus(n).minus(DSL.inline(1L)),
                    type,
                    CORRELATION,
                    CAUSATION,
                    HEADERS,
                    payload)
                .from(e));
  }

  /**
   * Per event type of one chunk, the latest offset: {@code unnest(types, latest)}, merged into the
   * stream's type index (the greater offset wins).
   */
  private static Query upsertTypes(DSLContext dsl, EventTables tables) {
    Table<Record> st = tables.streamTypes.as("st");
    Field<String> type = DSL.field(DSL.name("t", "type"), SQLDataType.CLOB);
    Field<Long> latest = DSL.field(DSL.name("t", "latest"), SQLDataType.BIGINT);
    Table<?> t = StatementCache.rows(false, "t", List.of("type", "latest"), TYPES, LATEST);
    return dsl.insertInto(st, EventTables.STREAM_ID, EventTables.TYPE, LATEST_OFFSET)
        .select(dsl.select(STREAM, type, latest).from(t))
        .onConflict(EventTables.STREAM_ID, EventTables.TYPE)
        .doUpdate()
        .set(
            LATEST_OFFSET,
            DSL.greatest(EventTables.column(st, LATEST_OFFSET), DSL.excluded(LATEST_OFFSET)));
  }

  /** Any stream, the emptiest first, at random among equals. */
  private static SelectForUpdateStep<Record1<Long>> anyStream(
      DSLContext dsl, Table<Record> streams) {
    return dsl.select(ID).from(streams).orderBy(NEXT_OFFSET, rand()).limit(DSL.inline(1));
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
  public long lockAnyStream(Connection c) {
    return Jdbc.unchecked(
        "locking a stream",
        () -> {
          Long free = Jdbc.firstLong(freeStream, c);
          if (free != null) {
            return free;
          }
          if (Jdbc.anyRow(anyEmptyStream, c)) {
            // Another empty stream would only add a stream to read; wait for a held one instead.
            Long held = Jdbc.firstLong(heldStream, c);
            if (held != null) {
              return held;
            }
          }
          return Jdbc.firstLong(createStream, c);
        });
  }

  /** Creates an empty stream (locked by this transaction until it ends) and returns its id. */
  public long createStream(Connection c) {
    return Jdbc.unchecked("creating a stream", () -> Jdbc.firstLong(createStream, c));
  }

  /**
   * Locks a given stream, waiting for other writers, and returns its next offset (for the caller's
   * optimistic-concurrency check).
   */
  public long lockStream(Connection c, long streamId) {
    Long next =
        Jdbc.unchecked("locking stream " + streamId, () -> Jdbc.firstLong(lockStream, c, streamId));
    if (next == null) {
      throw new IllegalArgumentException("stream " + streamId + " does not exist");
    }
    return next;
  }

  /** Appends to a stream this transaction has locked: assigns offsets and inserts the events. */
  public Appended write(Tx tx, long streamId, List<Encoded> events, Meta meta) {
    int n = events.size();
    Connection c = tx.connection();
    return Jdbc.unchecked(
        "inserting events into stream " + streamId,
        () -> {
          long next = Jdbc.firstLong(advance, c, streamId, (long) n);
          long first = next - n;
          Map<String, Long> latestByType = new LinkedHashMap<>();
          List<String> ids = new ArrayList<>(n);
          for (int i = 0; i < n; i++) {
            Encoded e = events.get(i);
            latestByType.put(e.type(), first + i);
            ids.add(e.messageId().toString());
          }
          insertEvents(c, streamId, first, events, meta);
          upsertTypes(c, streamId, latestByType);
          // Wake idle event pumps in every process; PostgreSQL folds the signals of one
          // transaction.
          try (PreparedStatement ps = notify.prepare(c, channel, "")) {
            ps.execute();
          }
          return new Appended(streamId, first, next, ids);
        });
  }

  private void insertEvents(
      Connection c, long streamId, long first, List<Encoded> events, Meta meta)
      throws SQLException {
    JSONB headers = JSONB.valueOf(meta.headersJson());
    try (PreparedStatement ps = c.prepareStatement(insertEvents.sql())) {
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
        insertEvents.bind(
            ps,
            streamId,
            first + from,
            meta.correlationId(),
            meta.causationId(),
            headers,
            ids,
            types,
            payloads);
        int inserted = ps.executeUpdate();
        if (inserted != size) {
          throw new IllegalStateException(
              "inserted " + inserted + " of " + size + " events into stream " + streamId);
        }
        from = to;
      }
    }
  }

  private void upsertTypes(Connection c, long streamId, Map<String, Long> latestByType)
      throws SQLException {
    List<Map.Entry<String, Long>> all = new ArrayList<>(latestByType.entrySet());
    try (PreparedStatement ps = c.prepareStatement(upsertTypes.sql())) {
      for (int from = 0; from < all.size(); from += CHUNK_EVENTS) {
        int size = Math.min(CHUNK_EVENTS, all.size() - from);
        String[] types = new String[size];
        Long[] latest = new Long[size];
        for (int i = 0; i < size; i++) {
          types[i] = all.get(from + i).getKey();
          latest[i] = all.get(from + i).getValue();
        }
        upsertTypes.bind(ps, streamId, types, latest);
        ps.executeUpdate();
      }
    }
  }
}
