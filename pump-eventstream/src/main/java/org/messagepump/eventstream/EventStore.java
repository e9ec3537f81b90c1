package org.messagepump.eventstream;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.messagepump.core.PumpException;
import org.messagepump.core.Transactions;
import org.messagepump.core.spi.MessageCodec;
import org.messagepump.core.spi.Tx;
import org.messagepump.eventstream.internal.EventRows;
import org.messagepump.eventstream.internal.StreamWriter;
import org.messagepump.eventstream.internal.Tables;
import org.messagepump.eventstream.internal.Tables.Events;
import org.messagepump.eventstream.internal.Tables.Streams;

/**
 * The event store: appends events to streams inside the caller's transaction, reads them back, and
 * gives access to the handlers' checkpoints through {@link #handlers()}.
 *
 * <pre>{@code
 * EventStore.migrate(dataSource);
 * EventStore store = EventStore.create(dataSource, codec);
 * AppendResult r = store.append(Tx.of(connection), List.of(new OrderPlaced("o-1")));
 * }</pre>
 */
public final class EventStore {

  /** The largest number of events {@link #read} returns at once. */
  public static final int MAX_READ_LIMIT = 10_000;

  private final DataSource dataSource;
  private final MessageCodec codec;
  private final StreamWriter writer;
  private final EventHandlers handlers;
  private final Counter appended;

  private EventStore(DataSource dataSource, MessageCodec codec, MeterRegistry registry) {
    this.dataSource = dataSource;
    this.codec = codec;
    this.writer = new StreamWriter(codec);
    this.handlers = new EventHandlers(dataSource);
    this.appended =
        registry == null
            ? null
            : Counter.builder("messagepump.eventstream.appended")
                .description("Events appended to streams")
                .register(registry);
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
   * Creates or upgrades the {@code eventstream} schema with its own Flyway history table ({@code
   * eventstream.eventstream_flyway_history}).
   */
  public static void migrate(DataSource dataSource) {
    Objects.requireNonNull(dataSource, "dataSource");
    try {
      Flyway.configure()
          .dataSource(dataSource)
          .schemas(Tables.SCHEMA)
          .createSchemas(true)
          .table("eventstream_flyway_history")
          .locations("classpath:db/eventstream")
          .load()
          .migrate();
    } catch (FlywayException e) {
      throw new PumpException("migrating the eventstream schema failed: " + e.getMessage(), e);
    }
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
   * @throws IllegalArgumentException when the list is null or empty, holds null, or holds an event
   *     whose class the codec does not know; nothing is written
   */
  public AppendResult append(Tx tx, List<?> events, EventMetadata metadata) {
    Objects.requireNonNull(tx, "tx");
    Objects.requireNonNull(metadata, "metadata");
    List<StreamWriter.Encoded> encoded = writer.encode(events);
    AppendResult r =
        Transactions.inCaller(
            tx,
            "appending events",
            t -> writer.write(tx.dsl(), writer.lockAnyStream(tx.dsl()), encoded, metadata));
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
   * @throws IllegalArgumentException on bad input (negative offset, unknown stream, bad events)
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
    Objects.requireNonNull(tx, "tx");
    Objects.requireNonNull(metadata, "metadata");
    if (expecting && expectedNextOffset < 0) {
      throw new IllegalArgumentException(
          "expectedNextOffset must not be negative: " + expectedNextOffset);
    }
    List<StreamWriter.Encoded> encoded = writer.encode(events);
    AppendResult r =
        Transactions.inCaller(
            tx,
            "appending events to stream " + streamId,
            t -> {
              writer.lockStream(tx.dsl(), streamId, expecting ? expectedNextOffset : -1);
              return writer.write(tx.dsl(), streamId, encoded, metadata);
            });
    counted(r);
    return r;
  }

  /** Creates an empty stream in the caller's transaction and returns its id. */
  public long createStream(Tx tx) {
    Objects.requireNonNull(tx, "tx");
    return Transactions.inCaller(tx, "creating a stream", t -> writer.createStream(tx.dsl()));
  }

  /** Reads up to {@code limit} committed events of a stream from {@code fromOffset}, in order. */
  public List<StoredEvent> read(long streamId, long fromOffset, int limit) {
    if (fromOffset < 0) {
      throw new IllegalArgumentException("fromOffset must not be negative: " + fromOffset);
    }
    if (limit < 1 || limit > MAX_READ_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_READ_LIMIT + ": " + limit);
    }
    return Transactions.inNew(
        dataSource,
        "reading stream " + streamId,
        tx ->
            tx.dsl()
                .select(EventRows.COLUMNS)
                .from(Events.T)
                .where(Events.STREAM_ID.eq(streamId))
                .and(Events.OFFSET.ge(fromOffset))
                .orderBy(Events.OFFSET)
                .limit(limit)
                .fetch(EventRows::toEvent));
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
                .select(Streams.ID, Streams.NEXT_OFFSET, Streams.CREATED_AT)
                .from(Streams.T)
                .orderBy(Streams.ID)
                .fetch(
                    r ->
                        new StreamInfo(
                            r.value1(),
                            r.value2(),
                            r.value3() == null ? null : r.value3().toInstant())));
  }

  private void counted(AppendResult r) {
    if (appended != null) {
      appended.increment(r.nextOffset() - r.firstOffset());
    }
  }

  /** Builds an {@link EventStore}. */
  public static final class Builder {
    private final DataSource dataSource;
    private final MessageCodec codec;
    private MeterRegistry meterRegistry;

    private Builder(DataSource dataSource, MessageCodec codec) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.codec = Objects.requireNonNull(codec, "codec");
    }

    /** Where to register {@code messagepump.eventstream.appended}; none by default. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
      return this;
    }

    /** The store. */
    public EventStore build() {
      return new EventStore(dataSource, codec, meterRegistry);
    }
  }
}
