package org.messagepump.eventstream;

import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.core.Limits;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.ProducerHook;
import org.messagepump.core.ProducerHooks;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.MicrometerMeters;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.internal.EventRows;
import org.messagepump.eventstream.internal.EventTables;
import org.messagepump.eventstream.internal.KeyedStreams;
import org.messagepump.eventstream.internal.StreamWriter;

/**
 * The producer face of the event store: appends events to streams inside the caller's transaction,
 * decodes stored events with its codec, and makes the drivers of event handlers ({@link
 * #driver(String, EventHandlers)}). What needs no codec (migrating, reading streams, pausing
 * handlers, lag and checkpoints) is on its operator face, {@link #operations()}.
 *
 * <pre>{@code
 * EventStore store = EventStore.create(dataSource, codec);
 * store.operations().migrate();
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

  /** The schema a store uses unless {@link Builder#schema} says otherwise. */
  public static final String DEFAULT_SCHEMA = EventTables.SCHEMA;

  private final DataSource dataSource;
  private final MessageCodec codec;
  private final EventTables tables;
  private final Limits limits;
  private final StreamWriter writer;
  private final KeyedStreams keyed;
  private final EventOperations operations;
  private final Meters meters;
  private final Meters.Counter appended;
  private final ProducerHook producerHook;

  private EventStore(Builder b) {
    this.dataSource = b.dataSource;
    this.codec = b.codec;
    this.tables = EventTables.of(b.schema);
    this.limits = b.limits;
    this.writer = new StreamWriter(codec, tables, limits);
    this.keyed = new KeyedStreams(tables, writer);
    this.operations = new EventOperations(dataSource, tables);
    this.producerHook = b.producerHook;
    this.meters = b.meters;
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

  /** The schema this store's tables live in. */
  public String schema() {
    return tables.schema();
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
  EventTables tables() {
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

  /**
   * The operator face of this store (same data source and schema): migrating, grants, pausing
   * handlers, reading streams, lag and checkpoints.
   */
  public EventOperations operations() {
    return operations;
  }

  /** Where the store and its drivers register meters, or null for none. */
  Meters meters() {
    return meters;
  }

  /**
   * The driver of the handler {@code handlerKey} with {@code handlers}, with {@link
   * EventDriverOptions#defaults()}: give it to a {@code MessagePump}.
   *
   * @throws IllegalArgumentException as {@link #driver(String, EventHandlers, EventDriverOptions)}
   */
  public EventDriver driver(String handlerKey, EventHandlers handlers) {
    return driver(handlerKey, handlers, EventDriverOptions.defaults());
  }

  /**
   * The driver of the handler {@code handlerKey} (its stable name, under which its checkpoints are
   * kept: 1-{@value EventDriver#MAX_HANDLER_KEY_LENGTH} letters, digits, {@code _ . : / -}) with
   * {@code handlers} and {@code options}. Its meters go to this store's meter registry, if any.
   *
   * @throws IllegalArgumentException when the key breaks that rule, {@code handlers} or {@code
   *     options} is null, a typed handler's class is not registered with the codec, or one type
   *     name has two handlers (a typed and a raw one)
   */
  public EventDriver driver(String handlerKey, EventHandlers handlers, EventDriverOptions options) {
    return new EventDriver(this, handlerKey, handlers, options);
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
              t ->
                  appendResult(
                      writer.write(tx, writer.lockAnyStream(tx.connection()), encoded, meta)));
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
                long nextOffset = writer.lockStream(tx.connection(), streamId);
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
                Long existing = keyed.streamOf(tx.connection(), streamKey);
                if (existing == null && expectedNextOffset != 0) {
                  throw new OffsetConflictException(streamKey, 0, expectedNextOffset, 0);
                }
                long streamId =
                    existing != null ? existing : keyed.streamOrCreate(tx.connection(), streamKey);
                long nextOffset = writer.lockStream(tx.connection(), streamId);
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

  /** Creates an empty stream in the caller's transaction and returns its id. */
  public long createStream(Tx tx) {
    Objects.requireNonNull(tx, "tx must not be null");
    return Transactions.inCaller(
        tx, "creating a stream", t -> writer.createStream(tx.connection()));
  }

  /** Decodes a stored event's payload into its registered class. */
  public Object decode(StoredEvent event) {
    return codec.decode(event.envelope().type(), event.envelope().payload());
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
     * it with {@link EventOperations#migrate()}): 1-40 lower-case letters, digits or {@code _}, not
     * starting with a digit.
     */
    public Builder schema(String schema) {
      this.schema = EventTables.schemaName("schema", schema);
      return this;
    }

    /** The limits appends are checked against ({@link Limits#defaults()} by default). */
    public Builder limits(Limits limits) {
      this.limits = Objects.requireNonNull(limits, "limits must not be null");
      return this;
    }

    /**
     * Where to register {@code messagepump.eventstream.appended}, and the meters of the drivers
     * made by the store ({@code messagepump.eventstream.*}, the handlers' lag gauges); none by
     * default.
     */
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
