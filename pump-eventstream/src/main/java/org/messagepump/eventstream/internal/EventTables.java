package org.messagepump.eventstream.internal;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Name;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Pauses;
import org.messagepump.core.spi.StatementSets;

/**
 * jOOQ names of one event store schema (see {@code db/eventstream/V1__*.sql}): the tables are per
 * instance, qualified with the schema the store was built for and quoted by jOOQ; the columns are
 * the same in every schema. A statement reading two tables that share a column name qualifies it
 * with {@link #column}.
 */
public final class EventTables {

  /** The default schema. */
  public static final String SCHEMA = "eventstream";

  /** Flyway's history table, in the store's schema (so every schema has its own). */
  public static final String HISTORY_TABLE = "eventstream_flyway_history";

  /** The table names, in the order {@code grantStatements} lists them. */
  public static final List<String> TABLE_NAMES =
      List.of(
          "streams",
          "events",
          "stream_types",
          "handler_checkpoints",
          "handlers",
          "stream_keys",
          "paused_handlers");

  private static final EventTables DEFAULT = new EventTables(SCHEMA);

  private final String schema;
  private final StatementSets<EventTables> statements = new StatementSets<>(this);

  /** Streams and their next offsets. */
  public final Table<Record> streams;

  /** The events, by stream and offset. */
  public final Table<Record> events;

  /** Per stream and event type, the latest offset of that type (V2). */
  public final Table<Record> streamTypes;

  /** Each handler's checkpoint of each stream. */
  public final Table<Record> checkpoints;

  /** Each handler's registration: its horizon and deferred streams (V2). */
  public final Table<Record> handlers;

  /** Streams addressed by an application key (V2). */
  public final Table<Record> streamKeys;

  /** Handler keys paused cluster-wide (V3), through the drivers' one pause mechanism. */
  public final Pauses pauses;

  private EventTables(String schema) {
    this.schema = schema;
    this.streams = DSL.table(DSL.name(schema, "streams"));
    this.events = DSL.table(DSL.name(schema, "events"));
    this.streamTypes = DSL.table(DSL.name(schema, "stream_types"));
    this.checkpoints = DSL.table(DSL.name(schema, "handler_checkpoints"));
    this.handlers = DSL.table(DSL.name(schema, "handlers"));
    this.streamKeys = DSL.table(DSL.name(schema, "stream_keys"));
    this.pauses =
        Pauses.of(
                DSL.table(DSL.name(schema, "paused_handlers")),
                DSL.field(DSL.name("handler_key"), SQLDataType.CLOB),
                "handlerKey")
            .refusingBlankNames();
  }

  /** The tables of {@code schema}, validated by {@link #schemaName}. */
  public static EventTables of(String schema) {
    String s = schemaName("schema", schema);
    return s.equals(SCHEMA) ? DEFAULT : new EventTables(s);
  }

  /** The tables of the default schema. */
  public static EventTables defaults() {
    return DEFAULT;
  }

  /** The schema name. */
  public String schema() {
    return schema;
  }

  /**
   * The statements of one kind for this schema ({@code kind}: a query class's holder of rendered
   * statements), made by {@code render} on first use and kept with these tables: every driver and
   * operation of the store shares them, and every store of the default schema. Kept per schema, not
   * per driver: a handler's driver rendering its own through jOOQ when built was a burst of
   * rendering and of JIT compilation at every driver's start (docs/benchmarks.md).
   */
  public <T> T statements(Class<T> kind, java.util.function.Function<EventTables, T> render) {
    return statements.get(kind, render);
  }

  /**
   * Validates a schema name ({@link Inputs#schema}): a lower-case identifier of at most {@value
   * Inputs#MAX_SCHEMA_LENGTH} characters, not a PostgreSQL system schema. Throws an {@link
   * IllegalArgumentException} naming {@code argument} otherwise.
   */
  public static String schemaName(String argument, String schema) {
    return Inputs.schema(argument, schema);
  }

  /**
   * The NOTIFY channel appends to this schema signal and its event pumps listen on: {@code
   * messagepump_events_<schema>} ({@link org.messagepump.core.spi.WakeSignal#channel}).
   */
  public String wakeChannel() {
    return org.messagepump.core.spi.WakeSignal.channel("events", schema);
  }

  /** {@code name} rendered as a quoted PostgreSQL identifier. */
  public static String quoted(Name name) {
    return DSL.using(SQLDialect.POSTGRES).render(name);
  }

  /** {@code <schema>.<table>} as a quoted identifier (for SQL written by hand). */
  public String quoted(String table) {
    return quoted(DSL.name(schema, table));
  }

  /** {@code column} qualified with {@code table}'s name or alias. */
  public static <T> Field<T> column(Table<?> table, Field<T> column) {
    return DSL.field(
        table.getQualifiedName().append(column.getUnqualifiedName()), column.getDataType());
  }

  // streams

  /** Column {@code id} of streams. */
  public static final Field<Long> ID = DSL.field(DSL.name("id"), SQLDataType.BIGINT);

  /** Column {@code next_offset} of streams: every event below it is committed. */
  public static final Field<Long> NEXT_OFFSET =
      DSL.field(DSL.name("next_offset"), SQLDataType.BIGINT);

  /** Column {@code created_at} of streams. */
  public static final Field<OffsetDateTime> CREATED_AT =
      DSL.field(DSL.name("created_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

  /** Column {@code changed_xid} of streams: the xid of the last transaction that changed it. */
  public static final Field<Long> CHANGED_XID =
      DSL.field(DSL.name("changed_xid"), SQLDataType.BIGINT);

  // events

  /** Column {@code message_id} of events. */
  public static final Field<UUID> MESSAGE_ID = DSL.field(DSL.name("message_id"), SQLDataType.UUID);

  /** Column {@code stream_id} of events, stream types, checkpoints and stream keys. */
  public static final Field<Long> STREAM_ID = DSL.field(DSL.name("stream_id"), SQLDataType.BIGINT);

  /** Column {@code stream_offset} of events. */
  public static final Field<Long> STREAM_OFFSET =
      DSL.field(DSL.name("stream_offset"), SQLDataType.BIGINT);

  /** Column {@code type} of events and stream types. */
  public static final Field<String> TYPE = DSL.field(DSL.name("type"), SQLDataType.CLOB);

  /** Column {@code correlation_id} of events. */
  public static final Field<String> CORRELATION_ID =
      DSL.field(DSL.name("correlation_id"), SQLDataType.CLOB);

  /** Column {@code causation_id} of events. */
  public static final Field<String> CAUSATION_ID =
      DSL.field(DSL.name("causation_id"), SQLDataType.CLOB);

  /** Column {@code headers} of events (read as text and parsed per row: see {@link EventRows}). */
  public static final Field<JSONB> HEADERS = DSL.field(DSL.name("headers"), SQLDataType.JSONB);

  /** Column {@code payload} of events. */
  public static final Field<byte[]> PAYLOAD = DSL.field(DSL.name("payload"), SQLDataType.BLOB);

  /** Column {@code recorded_at} of events. */
  public static final Field<OffsetDateTime> RECORDED_AT =
      DSL.field(DSL.name("recorded_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

  // stream_types

  /** Column {@code latest_offset} of stream types. */
  public static final Field<Long> LATEST_OFFSET =
      DSL.field(DSL.name("latest_offset"), SQLDataType.BIGINT);

  // handler_checkpoints

  /** Column {@code handler_key} of checkpoints, handlers and paused handlers. */
  public static final Field<String> HANDLER_KEY =
      DSL.field(DSL.name("handler_key"), SQLDataType.CLOB);

  /** Column {@code checkpoint_offset} of checkpoints: the next offset the handler reads. */
  public static final Field<Long> CHECKPOINT_OFFSET =
      DSL.field(DSL.name("checkpoint_offset"), SQLDataType.BIGINT);

  /** Column {@code failures} of checkpoints. */
  public static final Field<Integer> FAILURES =
      DSL.field(DSL.name("failures"), SQLDataType.INTEGER);

  /** Column {@code resume_at} of checkpoints. */
  public static final Field<OffsetDateTime> RESUME_AT =
      DSL.field(DSL.name("resume_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

  /** Column {@code parked_at} of checkpoints. */
  public static final Field<OffsetDateTime> PARKED_AT =
      DSL.field(DSL.name("parked_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

  /** Column {@code parked_reason} of checkpoints. */
  public static final Field<String> PARKED_REASON =
      DSL.field(DSL.name("parked_reason"), SQLDataType.CLOB);

  /** Column {@code updated_at} of checkpoints. */
  public static final Field<OffsetDateTime> UPDATED_AT =
      DSL.field(DSL.name("updated_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

  /**
   * Column {@code stream_end} of checkpoints: the stream's end as the handler last saw it; the row
   * is pending while its offset is below.
   */
  public static final Field<Long> STREAM_END =
      DSL.field(DSL.name("stream_end"), SQLDataType.BIGINT);

  /** Column {@code turn} of checkpoints: the row's place in the handler's round-robin queue. */
  public static final Field<Long> TURN = DSL.field(DSL.name("turn"), SQLDataType.BIGINT);

  /**
   * Column {@code claimed_by} of checkpoints: the driver whose claim served the row last (a random
   * number per driver object), see {@code PendingClaim}.
   */
  public static final Field<Long> CLAIMED_BY =
      DSL.field(DSL.name("claimed_by"), SQLDataType.BIGINT);

  /**
   * Column {@code claimed_us} of checkpoints: the database clock, in microseconds since the epoch,
   * when that claim moved the checkpoint.
   */
  public static final Field<Long> CLAIMED_US =
      DSL.field(DSL.name("claimed_us"), SQLDataType.BIGINT);

  /**
   * Column {@code pending} of checkpoints: {@code checkpoint_offset < stream_end}, a stored
   * generated column (read only), the ready index's predicate.
   */
  public static final Field<Boolean> PENDING = DSL.field(DSL.name("pending"), SQLDataType.BOOLEAN);

  // handlers

  /** Column {@code horizon} of handlers. */
  public static final Field<Long> HORIZON = DSL.field(DSL.name("horizon"), SQLDataType.BIGINT);

  /** Column {@code deferred} of handlers: the streams the last refresh could not update. */
  public static final Field<Long[]> DEFERRED =
      DSL.field(DSL.name("deferred"), SQLDataType.BIGINT.array());

  /** Column {@code start_position} of handlers. */
  public static final Field<String> START_POSITION =
      DSL.field(DSL.name("start_position"), SQLDataType.CLOB);

  // stream_keys

  /** Column {@code stream_key} of stream keys. */
  public static final Field<String> STREAM_KEY =
      DSL.field(DSL.name("stream_key"), SQLDataType.CLOB);

  /**
   * A new turn for a checkpoint row: {@code DEFAULT}, the column's {@code nextval} of {@code
   * checkpoint_turns} (so the sequence's name is not written as a literal into each statement).
   */
  public static Field<Long> nextTurn() {
    return DSL.defaultValue(SQLDataType.BIGINT);
  }

  /** This transaction's id as a bigint ({@code pg_current_xact_id()}, assigning one if needed). */
  public static Field<Long> currentXid() {
    return DSL.field("pg_current_xact_id()::text::bigint", SQLDataType.BIGINT);
  }

  /**
   * The oldest transaction id still running in this statement's snapshot: every transaction whose
   * writes the snapshot does not see has an id at or above it.
   */
  public static Field<Long> snapshotXmin() {
    return DSL.field("pg_snapshot_xmin(pg_current_snapshot())::text::bigint", SQLDataType.BIGINT);
  }

  /** The database clock, {@code clock_timestamp()}: the time every process agrees on. */
  public static Field<OffsetDateTime> clockTimestamp() {
    return DatabaseClock.nowOffset();
  }
}
