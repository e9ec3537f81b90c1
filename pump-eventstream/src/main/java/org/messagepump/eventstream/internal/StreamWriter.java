package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.excluded;
import static org.jooq.impl.DSL.greatest;
import static org.jooq.impl.DSL.rand;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.InsertValuesStep8;
import org.jooq.JSONB;
import org.jooq.Record1;
import org.jooq.impl.DSL;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.MessageCodec;
import org.messagepump.eventstream.AppendResult;
import org.messagepump.eventstream.EventMetadata;
import org.messagepump.eventstream.OffsetConflictException;
import org.messagepump.eventstream.internal.Tables.Events;
import org.messagepump.eventstream.internal.Tables.StreamTypes;
import org.messagepump.eventstream.internal.Tables.Streams;

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
 */
public final class StreamWriter {

  /** The NOTIFY channel appends signal and event pumps listen on. */
  public static final String WAKE_CHANNEL = "messagepump_events";

  /** One event, validated and encoded, not yet written. */
  public record Encoded(UUID messageId, String type, byte[] payload) {}

  private static final ObjectMapper JSON = new ObjectMapper();

  private final MessageCodec codec;

  /** A writer encoding with {@code codec}. */
  public StreamWriter(MessageCodec codec) {
    this.codec = codec;
  }

  /** Validates and encodes every event before anything is written; bad input is an IAE. */
  public List<Encoded> encode(List<?> events) {
    if (events == null || events.isEmpty()) {
      throw new IllegalArgumentException("events must not be null or empty");
    }
    List<Encoded> encoded = new ArrayList<>(events.size());
    for (int i = 0; i < events.size(); i++) {
      Object event = events.get(i);
      if (event == null) {
        throw new IllegalArgumentException("events[" + i + "] is null");
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
      if (payload == null) {
        throw new IllegalArgumentException("events[" + i + "] encoded to null");
      }
      encoded.add(new Encoded(UUID.randomUUID(), type, payload));
    }
    return encoded;
  }

  /** The headers as JSON; an IAE when they cannot be written. */
  public static JSONB headersJson(Map<String, String> headers) {
    try {
      return JSONB.valueOf(JSON.writeValueAsString(headers));
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("headers cannot be written as JSON", e);
    }
  }

  /**
   * Locks a stream for appending: one no other transaction holds (without waiting); if all are
   * held, waits for one only when an empty stream exists, otherwise creates a new stream.
   */
  public long lockAnyStream(DSLContext dsl) {
    Record1<Long> free =
        dsl.select(Streams.ID)
            .from(Streams.T)
            .orderBy(Streams.NEXT_OFFSET, rand())
            .limit(1)
            .forNoKeyUpdate()
            .skipLocked()
            .fetchOne();
    if (free != null) {
      return free.value1();
    }
    if (dsl.fetchExists(dsl.selectOne().from(Streams.T).where(Streams.NEXT_OFFSET.eq(0L)))) {
      // Another empty stream would only add a stream to read; wait for a held one instead.
      Record1<Long> held =
          dsl.select(Streams.ID)
              .from(Streams.T)
              .orderBy(Streams.NEXT_OFFSET, rand())
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
    return dsl.insertInto(Streams.T)
        .defaultValues()
        .returningResult(Streams.ID)
        .fetchOne()
        .value1();
  }

  /**
   * Locks a given stream, waiting for other writers, and checks its next offset when {@code
   * expectedNextOffset >= 0}.
   */
  public void lockStream(DSLContext dsl, long streamId, long expectedNextOffset) {
    Record1<Long> row =
        dsl.select(Streams.NEXT_OFFSET)
            .from(Streams.T)
            .where(Streams.ID.eq(streamId))
            .forNoKeyUpdate()
            .fetchOne();
    if (row == null) {
      throw new IllegalArgumentException("stream " + streamId + " does not exist");
    }
    if (expectedNextOffset >= 0 && row.value1() != expectedNextOffset) {
      throw new OffsetConflictException(streamId, expectedNextOffset, row.value1());
    }
  }

  /** Appends to a stream this transaction has locked: assigns offsets and inserts the events. */
  public AppendResult write(
      DSLContext dsl, long streamId, List<Encoded> events, EventMetadata metadata) {
    int n = events.size();
    long next =
        dsl.update(Streams.T)
            .set(Streams.NEXT_OFFSET, Streams.NEXT_OFFSET.plus((long) n))
            .where(Streams.ID.eq(streamId))
            .returningResult(Streams.NEXT_OFFSET)
            .fetchOne()
            .value1();
    long first = next - n;
    JSONB headers = headersJson(metadata.headers());
    InsertValuesStep8<?, UUID, Long, Long, String, String, String, JSONB, byte[]> insert =
        dsl.insertInto(
            Events.T,
            Events.MESSAGE_ID,
            Events.STREAM_ID,
            Events.OFFSET,
            Events.TYPE,
            Events.CORRELATION_ID,
            Events.CAUSATION_ID,
            Events.HEADERS,
            Events.PAYLOAD);
    Map<String, Long> latestByType = new LinkedHashMap<>();
    List<String> ids = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Encoded e = events.get(i);
      insert =
          insert.values(
              e.messageId(),
              streamId,
              first + i,
              e.type(),
              metadata.correlationId(),
              metadata.causationId(),
              headers,
              e.payload());
      latestByType.put(e.type(), first + i);
      ids.add(e.messageId().toString());
    }
    insert.execute();
    var types =
        dsl.insertInto(
            StreamTypes.T, StreamTypes.STREAM_ID, StreamTypes.TYPE, StreamTypes.LATEST_OFFSET);
    for (Map.Entry<String, Long> t : latestByType.entrySet()) {
      types = types.values(streamId, t.getKey(), t.getValue());
    }
    types
        .onConflict(StreamTypes.STREAM_ID, StreamTypes.TYPE)
        .doUpdate()
        .set(
            StreamTypes.LATEST_OFFSET,
            greatest(StreamTypes.LATEST_OFFSET, excluded(StreamTypes.LATEST_OFFSET)))
        .execute();
    // Wake idle event pumps in every process; PostgreSQL folds the signals of one transaction.
    dsl.select(DSL.function("pg_notify", Object.class, DSL.val(WAKE_CHANNEL), DSL.val(""))).fetch();
    return new AppendResult(streamId, first, next, ids);
  }
}
