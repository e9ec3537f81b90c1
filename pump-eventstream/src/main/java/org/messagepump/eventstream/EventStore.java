package org.messagepump.eventstream;

import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.jooq.impl.DSL;
import org.messagepump.core.Inputs;
import org.messagepump.core.Limits;
import org.messagepump.core.Meters;
import org.messagepump.core.MicrometerMeters;
import org.messagepump.core.Migrations;
import org.messagepump.core.ProducerHook;
import org.messagepump.core.ProducerHooks;
import org.messagepump.core.Transactions;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.MessageCodec;
import org.messagepump.eventstream.internal.EventRows;
import org.messagepump.eventstream.internal.KeyedStreams;
import org.messagepump.eventstream.internal.PauseQueries;
import org.messagepump.eventstream.internal.StreamWriter;
import org.messagepump.eventstream.internal.Tables;

/**
 * The event store: appends events to streams inside the caller's transaction, reads them back, and
 * gives access to the handlers' checkpoints through {@link #handlers()}.
 *
 * <pre>{@code
 * EventStore.migrate(dataSource);
 * EventStore store = EventStore.create(dataSource, codec);
 * AppendResult r = store.append(Tx.of(connection), List.of(new OrderPlaced("o-1")));
 * }</pre>
 *
 * <p>Every store lives in one schema ({@value #DEFAULT_SCHEMA} unless {@link Builder#schema} says
 * otherwise); stores in different schemas of one database share nothing. Every write checks its
 * input against the store's {@link Limits} before anything is sent, so bad input is an {@link
 * IllegalArgumentException} (a {@link NullPointerException} for a required null) and the caller's
 * transaction survives it.
 */
public final class EventStore {

  /** The largest number of events {@link #read} returns at once. */
  public static final int MAX_READ_LIMIT = 10_000;

  /** The schema a store uses unless {@link Builder#schema} says otherwise. */
  public static final String DEFAULT_SCHEMA = Tables.DEFAULT_SCHEMA;

  private static final int MAX_ROLE_BYTES = 63;

  private final DataSource dataSource;
  private final MessageCodec codec;
  private final Tables tables;
  private final Limits limits;
  private final StreamWriter writer;
  private final KeyedStreams keyed;
  private final EventRows rows;
  private final EventHandlers handlers;
  private final Meters.Counter appended;
  private final ProducerHook producerHook;

  private EventStore(Builder b) {
    this.dataSource = b.dataSource;
    this.codec = b.codec;
    this.tables = new Tables(b.schema);
    this.limits = b.limits;
    this.writer = new StreamWriter(codec, tables, limits);
    this.keyed = new KeyedStreams(tables, writer);
    this.rows = new EventRows(tables);
    this.handlers = new EventHandlers(dataSource, tables);
    this.producerHook = b.producerHook;
    this.appended =
        (b.meters != null ? b.meters : Meters.none())
            .counter("messagepump.eventstream.appended", "Events appended to streams");
  }

  /** A store on {@code dataSource} encoding events with {@code codec}, without metrics. */
  public static EventStore create(DataSource dataSource, MessageCodec codec) {
    return builder(dataSource, codec).build();
  }

  /** A builder for a store on {@code dataSource} encoding events with {@code codec}. */
  public static Builder builder(DataSource dataSource, MessageCodec codec) {
    return new Builder(dataSource, codec);
  }

  /**
   * Creates or upgrades the {@value #DEFAULT_SCHEMA} schema with its own Flyway history table
   * ({@code eventstream.eventstream_flyway_history}).
   */
  public static int migrate(DataSource dataSource) {
    return migrate(dataSource, DEFAULT_SCHEMA);
  }

  /**
   * Creates or upgrades the event store tables in {@code schema} (created if missing), with the
   * schema's own Flyway history table ({@code <schema>.eventstream_flyway_history}).
   *
   * @throws IllegalArgumentException when {@code schema} is not 1-40 lower-case letters, digits or
   *     {@code _} (not starting with a digit)
   */
  public static int migrate(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource must not be null");
    Tables.schemaName("schema", schema);
    // The one migration path of every driver: Flyway into the schema with its own history
    // table, serialized across processes by an advisory lock (core's Migrations).
    return Migrations.migrate(
        dataSource,
        schema,
        "eventstream_flyway_history",
        "classpath:db/eventstream",
        java.util.Map.of());
  }

  /**
   * The statements that give {@code role} exactly what a store in {@code schema} needs at run time
   * (after {@link #migrate(DataSource, String)} ran as the schema's owner): USAGE on the schema;
   * SELECT, INSERT, UPDATE and DELETE on its seven tables; USAGE and SELECT on the stream id and
   * checkpoint turn sequences. Identifiers are quoted.
   *
   * @throws IllegalArgumentException for a bad schema name, or a role name that is empty, holds NUL
   *     or is longer than 63 UTF-8 bytes (PostgreSQL would truncate it)
   */
  public static List<String> grantStatements(String schema, String role) {
    Tables.schemaName("schema", schema);
    Inputs.text("role", Inputs.key("role", role), MAX_ROLE_BYTES);
    Tables t = new Tables(schema);
    String r = Tables.quoted(DSL.name(role));
    String tableList =
        String.join(
            ", ",
            t.quoted("streams"),
            t.quoted("events"),
            t.quoted("stream_types"),
            t.quoted("handler_checkpoints"),
            t.quoted("handlers"),
            t.quoted("stream_keys"),
            t.quoted("paused_handlers"));
    return List.of(
        "GRANT USAGE ON SCHEMA " + Tables.quoted(DSL.name(schema)) + " TO " + r,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE " + tableList + " TO " + r,
        "GRANT USAGE, SELECT ON SEQUENCE "
            + t.quoted("streams_id_seq")
            + ", "
            + t.quoted("checkpoint_turns")
            + " TO "
            + r);
  }

  /** The schema this store's tables live in. */
  public String schema() {
    return tables.schema;
  }

  /** The input limits appends are checked against. */
  public Limits limits() {
    return limits;
  }

  /** The NOTIFY channel appends to this store signal (derived from the schema). */
  public String wakeChannel() {
    return tables.wakeChannel();
  }

  /** The store's tables (for its drivers). */
  Tables tables() {
    return tables;
  }

  /** The codec events are encoded and decoded with. */
  public MessageCodec codec() {
    return codec;
  }

  /** The data source this store reads from. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** Checkpoint operations: lag, parked streams, reset, set a checkpoint. */
  public EventHandlers handlers() {
    return handlers;
  }

  /**
   * Pauses the handler {@code handlerKey} cluster-wide: from the next poll on, no pump of any
   * process acquires events for it (its claim statement finds nothing; deliveries already being
   * handled finish). Appends go on, and the handler's checkpoints stay where they are, so it
   * resumes where it stopped. A key not registered yet may be paused. Returns true when the key was
   * not paused yet (a second pause keeps the first reason).
   *
   * @throws IllegalArgumentException when the key is null, blank, holds NUL or is over {@link
   *     Limits#MAX_KEY_BYTES} UTF-8 bytes, or the reason is over {@link Limits#MAX_REASON_CHARS}
   *     bytes or holds NUL; nothing is sent
   */
  public boolean pauseHandler(String handlerKey, String reason) {
    pausedKey(handlerKey);
    if (reason != null) {
      Inputs.text("reason", reason, Limits.MAX_REASON_CHARS);
    }
    return Transactions.inNew(
        dataSource,
        "pausing an event handler",
        tx -> PauseQueries.pause(tx.dsl(), tables, handlerKey, reason));
  }

  /**
   * Resumes a handler paused with {@link #pauseHandler}; true when it was paused.
   *
   * @throws IllegalArgumentException for a bad key, as {@link #pauseHandler}
   */
  public boolean resumeHandler(String handlerKey) {
    pausedKey(handlerKey);
    return Transactions.inNew(
        dataSource,
        "resuming an event handler",
        tx -> PauseQueries.resume(tx.dsl(), tables, handlerKey));
  }

  /** The handler keys paused cluster-wide, by key. */
  public List<PausedHandler> pausedHandlers() {
    return Transactions.inNew(
            dataSource, "listing paused event handlers", tx -> PauseQueries.list(tx.dsl(), tables))
        .stream()
        .map(r -> new PausedHandler(r.handlerKey(), r.pausedAt(), r.reason()))
        .toList();
  }

  private static void pausedKey(String handlerKey) {
    if (handlerKey == null || handlerKey.isBlank()) {
      throw new IllegalArgumentException("handlerKey must not be null or blank");
    }
    Inputs.key("handlerKey", handlerKey);
  }

  /**
   * Appends events to any stream, in the caller's transaction; see {@link #append(Tx, List,
   * EventMetadata)}.
   */
  public AppendResult append(Tx tx, List<?> events) {
    return append(tx, events, EventMetadata.NONE);
  }

  /**
   * Appends events atomically to one stream no other transaction is appending to (without waiting),
   * in the caller's transaction. The events are visible to handlers when the caller commits.
   *
   * <p>Any number of events may be appended at once: they are inserted in chunks of bound arrays.
   *
   * @throws NullPointerException when {@code tx}, {@code metadata}, the list or one of its events
   *     is null; nothing is written
   * @throws IllegalArgumentException when the list is empty, holds an event whose class the codec
   *     does not know or whose payload is over {@link Limits#maxPayloadBytes()}, or the metadata is
   *     over the limits (ids over {@link Limits#MAX_KEY_BYTES} bytes, headers over {@link
   *     Limits#maxHeaders()} or {@link Limits#maxHeaderBytes()}, NUL anywhere); nothing is sent
   */
  public AppendResult append(Tx tx, List<?> events, EventMetadata metadata) {
    Objects.requireNonNull(tx, "tx must not be null");
    StreamWriter.Meta checked = meta(metadata);
    List<StreamWriter.Encoded> encoded = writer.encode(events);
    ProducerHook.Send send = startSend(encoded);
    StreamWriter.Meta meta = send == null ? checked : withHeaders(metadata, send);
    AppendResult r;
    try {
      r =
          Transactions.inCaller(
              tx,
              "appending events",
              t -> appendResult(writer.write(tx, writer.lockAnyStream(tx.dsl()), encoded, meta)));
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, r);
    counted(r);
    return r;
  }

  /** Appends events to a given stream without an offset expectation (waits for other writers). */
  public AppendResult appendTo(Tx tx, long streamId, List<?> events) {
    return appendTo(tx, streamId, -1, events, EventMetadata.NONE, false);
  }

  /**
   * Appends events to a given stream if its next offset is {@code expectedNextOffset} (optimistic
   * concurrency), in the caller's transaction.
   *
   * @throws OffsetConflictException when the stream's next offset differs; nothing is written
   * @throws IllegalArgumentException on bad input (negative offset, unknown stream, bad events or
   *     metadata as for {@link #append(Tx, List, EventMetadata)})
   */
  public AppendResult appendTo(Tx tx, long streamId, long expectedNextOffset, List<?> events) {
    return appendTo(tx, streamId, expectedNextOffset, events, EventMetadata.NONE, true);
  }

  /** As {@link #appendTo(Tx, long, long, List)}, with metadata. */
  public AppendResult appendTo(
      Tx tx, long streamId, long expectedNextOffset, List<?> events, EventMetadata metadata) {
    return appendTo(tx, streamId, expectedNextOffset, events, metadata, true);
  }

  private AppendResult appendTo(
      Tx tx,
      long streamId,
      long expectedNextOffset,
      List<?> events,
      EventMetadata metadata,
      boolean expecting) {
    Objects.requireNonNull(tx, "tx must not be null");
    if (expecting && expectedNextOffset < 0) {
      throw new IllegalArgumentException(
          "expectedNextOffset must not be negative: " + expectedNextOffset);
    }
    StreamWriter.Meta checked = meta(metadata);
    List<StreamWriter.Encoded> encoded = writer.encode(events);
    ProducerHook.Send send = startSend(encoded);
    StreamWriter.Meta meta = send == null ? checked : withHeaders(metadata, send);
    AppendResult r;
    try {
      r =
          Transactions.inCaller(
              tx,
              "appending events to stream " + streamId,
              t -> {
                long nextOffset = writer.lockStream(tx.dsl(), streamId);
                if (expecting && nextOffset != expectedNextOffset) {
                  throw new OffsetConflictException(streamId, expectedNextOffset, nextOffset);
                }
                return appendResult(writer.write(tx, streamId, encoded, meta));
              });
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, r);
    counted(r);
    return r;
  }

  /**
   * Appends events to the stream of an application key (an aggregate id) if its next offset is
   * {@code expectedNextOffset}, in the caller's transaction. The key's first append (expected 0)
   * creates its stream; every later append goes to the same stream, so a handler sees the key's
   * events in order. The expected offset is the number of events the caller has read for the key
   * (its aggregate version).
   *
   * @throws OffsetConflictException when the key's next offset differs (another writer appended
   *     first, or a first append expected more than 0); nothing is written
   * @throws IllegalArgumentException on bad input: an empty key, NUL in it or more than {@link
   *     Limits#MAX_KEY_BYTES} bytes, a negative offset, bad events or metadata as for {@link
   *     #append(Tx, List, EventMetadata)}
   */
  public AppendResult appendToKey(
      Tx tx, String streamKey, long expectedNextOffset, List<?> events, EventMetadata metadata) {
    Objects.requireNonNull(tx, "tx must not be null");
    Inputs.key("streamKey", streamKey);
    if (expectedNextOffset < 0) {
      throw new IllegalArgumentException(
          "expectedNextOffset must not be negative: " + expectedNextOffset);
    }
    StreamWriter.Meta checked = meta(metadata);
    List<StreamWriter.Encoded> encoded = writer.encode(events);
    ProducerHook.Send send = startSend(encoded);
    StreamWriter.Meta meta = send == null ? checked : withHeaders(metadata, send);
    AppendResult r;
    try {
      r =
          Transactions.inCaller(
              tx,
              "appending events to a keyed stream",
              t -> {
                Long existing = keyed.streamOf(tx.dsl(), streamKey);
                if (existing == null && expectedNextOffset != 0) {
                  throw new OffsetConflictException(streamKey, 0, expectedNextOffset, 0);
                }
                long streamId =
                    existing != null ? existing : keyed.streamOrCreate(tx.dsl(), streamKey);
                long nextOffset = writer.lockStream(tx.dsl(), streamId);
                if (nextOffset != expectedNextOffset) {
                  throw new OffsetConflictException(
                      streamKey, streamId, expectedNextOffset, nextOffset);
                }
                return appendResult(writer.write(tx, streamId, encoded, meta));
              });
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, r);
    counted(r);
    return r;
  }

  /** As {@link #appendToKey(Tx, String, long, List, EventMetadata)}, without metadata. */
  public AppendResult appendToKey(
      Tx tx, String streamKey, long expectedNextOffset, List<?> events) {
    return appendToKey(tx, streamKey, expectedNextOffset, events, EventMetadata.NONE);
  }

  /** The stream of an application key, empty when nothing was appended to the key yet. */
  public java.util.OptionalLong streamOf(String streamKey) {
    Inputs.key("streamKey", streamKey);
    Long id =
        Transactions.inNew(
            dataSource, "looking up a stream key", tx -> keyed.streamOf(tx.dsl(), streamKey));
    return id == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(id);
  }

  /**
   * Reads up to {@code limit} committed events of an application key's stream from {@code
   * fromOffset}, in order (none when the key has no stream): to rebuild an aggregate.
   */
  public List<StoredEvent> readKey(String streamKey, long fromOffset, int limit) {
    java.util.OptionalLong id = streamOf(streamKey);
    if (id.isEmpty()) {
      checkRead(fromOffset, limit);
      return List.of();
    }
    return read(id.getAsLong(), fromOffset, limit);
  }

  /** Creates an empty stream in the caller's transaction and returns its id. */
  public long createStream(Tx tx) {
    Objects.requireNonNull(tx, "tx must not be null");
    return Transactions.inCaller(tx, "creating a stream", t -> writer.createStream(tx.dsl()));
  }

  /**
   * Reads up to {@code limit} committed events of a stream from {@code fromOffset}, in order.
   *
   * @throws org.messagepump.core.UndecodableMessageException when a stored event's headers are not
   *     a JSON object of strings (the message names the event, not its data)
   */
  public List<StoredEvent> read(long streamId, long fromOffset, int limit) {
    checkRead(fromOffset, limit);
    return Transactions.inNew(
        dataSource,
        "reading stream " + streamId,
        tx ->
            tx.dsl()
                .select(rows.columns())
                .from(tables.events.table)
                .where(tables.events.streamId.eq(streamId))
                .and(tables.events.offset.ge(fromOffset))
                .orderBy(tables.events.offset)
                .limit(limit)
                .fetch(r -> storedEvent(rows.toReadableRow(r))));
  }

  private static void checkRead(long fromOffset, int limit) {
    if (fromOffset < 0) {
      throw new IllegalArgumentException("fromOffset must not be negative: " + fromOffset);
    }
    if (limit < 1 || limit > MAX_READ_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_READ_LIMIT + ": " + limit);
    }
  }

  /** Decodes a stored event's payload into its registered class. */
  public Object decode(StoredEvent event) {
    return codec.decode(event.envelope().type(), event.envelope().payload());
  }

  /** Every stream with its committed next offset, by id. */
  public List<StreamInfo> streams() {
    return Transactions.inNew(
        dataSource,
        "listing streams",
        tx ->
            tx.dsl()
                .select(tables.streams.id, tables.streams.nextOffset, tables.streams.createdAt)
                .from(tables.streams.table)
                .orderBy(tables.streams.id)
                .fetch(
                    r ->
                        new StreamInfo(
                            r.value1(),
                            r.value2(),
                            r.value3() == null ? null : r.value3().toInstant())));
  }

  /**
   * How many events every stream holds together (the sum of the streams' committed next offsets):
   * one aggregate over the streams, whatever the number of handlers. Operators take differences of
   * it for the rate of appends.
   */
  public long eventCount() {
    return Transactions.inNew(
        dataSource,
        "counting events",
        tx ->
            tx.dsl()
                .select(DSL.coalesce(DSL.sum(tables.streams.nextOffset), java.math.BigDecimal.ZERO))
                .from(tables.streams.table)
                .fetchOne()
                .value1()
                .longValue());
  }

  /** The public event of an internal event row. */
  static StoredEvent storedEvent(EventRows.Row row) {
    return new StoredEvent(row.streamId(), row.offset(), row.envelope());
  }

  /** Validates metadata against the store's limits; bad input is an IAE (NPE for null). */
  private StreamWriter.Meta meta(EventMetadata metadata) {
    Objects.requireNonNull(metadata, "metadata must not be null");
    return writer.meta(metadata.correlationId(), metadata.causationId(), metadata.headers());
  }

  /** Starts the producer hook's send for an append, or null without a hook (no allocation). */
  private ProducerHook.Send startSend(List<StreamWriter.Encoded> encoded) {
    if (producerHook == null) {
      return null;
    }
    List<String> types = new java.util.ArrayList<>(encoded.size());
    for (StreamWriter.Encoded e : encoded) {
      types.add(e.type());
    }
    return ProducerHooks.start(
        producerHook,
        "eventstream",
        ProducerHooks.commonDestination(types),
        encoded.size(),
        encoded.size() == 1 ? encoded.get(0).messageId().toString() : null);
  }

  /** The metadata with the hook's headers added (the metadata's own win), checked again. */
  private StreamWriter.Meta withHeaders(EventMetadata metadata, ProducerHook.Send send) {
    Map<String, String> headers =
        ProducerHooks.merge(metadata.headers(), ProducerHooks.headers(send));
    try {
      return writer.meta(metadata.correlationId(), metadata.causationId(), headers);
    } catch (RuntimeException e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
  }

  private static void sent(ProducerHook.Send send, AppendResult r) {
    if (send != null) {
      ProducerHooks.sent(send, r.messageIds().size() == 1 ? r.messageIds().get(0) : null);
    }
  }

  private static AppendResult appendResult(StreamWriter.Appended a) {
    return new AppendResult(a.streamId(), a.firstOffset(), a.nextOffset(), a.messageIds());
  }

  private void counted(AppendResult r) {
    appended.increment(r.nextOffset() - r.firstOffset());
  }

  /** Builds an {@link EventStore}. */
  public static final class Builder {
    private final DataSource dataSource;
    private final MessageCodec codec;
    private Meters meters;
    private String schema = DEFAULT_SCHEMA;
    private Limits limits = Limits.defaults();
    private org.messagepump.core.ProducerHook producerHook;

    private Builder(DataSource dataSource, MessageCodec codec) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
      this.codec = Objects.requireNonNull(codec, "codec must not be null");
    }

    /**
     * The schema holding the store's tables ({@value EventStore#DEFAULT_SCHEMA} by default; create
     * it with {@link EventStore#migrate(DataSource, String)}): 1-40 lower-case letters, digits or
     * {@code _}, not starting with a digit.
     */
    public Builder schema(String schema) {
      this.schema = Tables.schemaName("schema", schema);
      return this;
    }

    /** The limits appends are checked against ({@link Limits#defaults()} by default). */
    public Builder limits(Limits limits) {
      this.limits = Objects.requireNonNull(limits, "limits must not be null");
      return this;
    }

    /** Where to register {@code messagepump.eventstream.appended}; none by default. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meters = MicrometerMeters.of(Objects.requireNonNull(meterRegistry, "meterRegistry"));
      return this;
    }

    /**
     * A hook called on every append ({@code append}, {@code appendTo}, {@code appendToKey}), whose
     * headers are added to the events' metadata headers (the metadata's own win): for example
     * {@code PumpTracing.producerHook()}, which traces each append and carries its context to the
     * handlers. None by default.
     *
     * @throws IllegalArgumentException when {@code producerHook} is null
     */
    public Builder producerHook(org.messagepump.core.ProducerHook producerHook) {
      if (producerHook == null) {
        throw new IllegalArgumentException("producerHook must not be null");
      }
      this.producerHook = producerHook;
      return this;
    }

    /** The store. */
    public EventStore build() {
      return new EventStore(this);
    }
  }
}
