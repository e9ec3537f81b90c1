package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.table;

import java.time.OffsetDateTime;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.Name;
import org.jooq.SQLDialect;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.DatabaseClock;
import org.messagepump.core.Inputs;

/**
 * The jOOQ names of one event store schema: the one place its tables are spelled. Each store has
 * its own instance, so two stores in two schemas of one database never share a table.
 */
public final class Tables {

  /** The default schema name. */
  public static final String DEFAULT_SCHEMA = "eventstream";

  /** The schema. */
  public final String schema;

  /** {@code <schema>.streams}. */
  public final Streams streams;

  /** {@code <schema>.events}. */
  public final Events events;

  /** {@code <schema>.stream_types}. */
  public final StreamTypes streamTypes;

  /** {@code <schema>.handler_checkpoints}. */
  public final Checkpoints checkpoints;

  /** {@code <schema>.handlers}. */
  public final Handlers handlers;

  /** {@code <schema>.stream_keys}. */
  public final StreamKeys streamKeys;

  /** The tables of {@code schema} (validated with {@link #schemaName}). */
  public Tables(String schema) {
    this.schema = schemaName("schema", schema);
    this.handlers = new Handlers(schema);
    this.streamKeys = new StreamKeys(schema);
    this.streams = new Streams(schema);
    this.events = new Events(schema);
    this.streamTypes = new StreamTypes(schema);
    this.checkpoints = new Checkpoints(schema);
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
   * messagepump_events_<schema>} ({@link org.messagepump.core.WakeSignal#channel}).
   */
  public String wakeChannel() {
    return org.messagepump.core.WakeSignal.channel("events", schema);
  }

  /** {@code name} rendered as a quoted PostgreSQL identifier (for SQL written by hand). */
  public static String quoted(Name name) {
    return DSL.using(SQLDialect.POSTGRES).render(name);
  }

  /** {@code <schema>.<table>} as a quoted identifier. */
  public String quoted(String table) {
    return quoted(name(schema, table));
  }

  /** {@code <schema>.streams}. */
  public static final class Streams {
    public final Table<?> table;
    public final Field<Long> id;
    public final Field<Long> nextOffset;
    public final Field<OffsetDateTime> createdAt;

    /** The xid (as bigint) of the last transaction that appended to or created the stream. */
    public final Field<Long> changedXid;

    private Streams(String s) {
      table = table(name(s, "streams"));
      id = field(name(s, "streams", "id"), SQLDataType.BIGINT);
      nextOffset = field(name(s, "streams", "next_offset"), SQLDataType.BIGINT);
      changedXid = field(name(s, "streams", "changed_xid"), SQLDataType.BIGINT);
      createdAt = field(name(s, "streams", "created_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
    }
  }

  /** {@code <schema>.events}. */
  public static final class Events {
    public final Table<?> table;
    public final Field<UUID> messageId;
    public final Field<Long> streamId;
    public final Field<Long> offset;
    public final Field<String> type;
    public final Field<String> correlationId;
    public final Field<String> causationId;

    /** Read as text and parsed per row in Java, so a bad row cannot fail a whole read. */
    public final Field<String> headers;

    public final Field<byte[]> payload;
    public final Field<OffsetDateTime> recordedAt;

    private Events(String s) {
      table = table(name(s, "events"));
      messageId = field(name(s, "events", "message_id"), SQLDataType.UUID);
      streamId = field(name(s, "events", "stream_id"), SQLDataType.BIGINT);
      offset = field(name(s, "events", "stream_offset"), SQLDataType.BIGINT);
      type = field(name(s, "events", "type"), SQLDataType.CLOB);
      correlationId = field(name(s, "events", "correlation_id"), SQLDataType.CLOB);
      causationId = field(name(s, "events", "causation_id"), SQLDataType.CLOB);
      headers =
          field(name(s, "events", "headers"), SQLDataType.JSONB)
              .cast(SQLDataType.CLOB)
              .as("headers");
      payload = field(name(s, "events", "payload"), SQLDataType.BLOB);
      recordedAt = field(name(s, "events", "recorded_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
    }
  }

  /** {@code <schema>.stream_types}. */
  public static final class StreamTypes {
    public final Table<?> table;
    public final Field<Long> streamId;
    public final Field<String> type;
    public final Field<Long> latestOffset;

    private StreamTypes(String s) {
      table = table(name(s, "stream_types"));
      streamId = field(name(s, "stream_types", "stream_id"), SQLDataType.BIGINT);
      type = field(name(s, "stream_types", "type"), SQLDataType.CLOB);
      latestOffset = field(name(s, "stream_types", "latest_offset"), SQLDataType.BIGINT);
    }
  }

  /** {@code <schema>.handler_checkpoints}. */
  public static final class Checkpoints {
    public final Table<?> table;
    public final Field<String> handlerKey;
    public final Field<Long> streamId;
    public final Field<Long> offset;
    public final Field<Integer> failures;
    public final Field<OffsetDateTime> resumeAt;
    public final Field<OffsetDateTime> parkedAt;
    public final Field<String> parkedReason;
    public final Field<OffsetDateTime> updatedAt;

    /** The stream's end as the handler last saw it: the row is pending while offset is below. */
    public final Field<Long> streamEnd;

    /** The row's place in the handler's round-robin queue of pending rows. */
    public final Field<Long> turn;

    /**
     * {@code checkpoint_offset < stream_end}, a stored generated column (read only): the ready
     * index's predicate.
     */
    public final Field<Boolean> pending;

    private Checkpoints(String s) {
      String t = "handler_checkpoints";
      table = table(name(s, t));
      handlerKey = field(name(s, t, "handler_key"), SQLDataType.CLOB);
      streamId = field(name(s, t, "stream_id"), SQLDataType.BIGINT);
      offset = field(name(s, t, "checkpoint_offset"), SQLDataType.BIGINT);
      failures = field(name(s, t, "failures"), SQLDataType.INTEGER);
      resumeAt = field(name(s, t, "resume_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
      parkedAt = field(name(s, t, "parked_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
      parkedReason = field(name(s, t, "parked_reason"), SQLDataType.CLOB);
      updatedAt = field(name(s, t, "updated_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
      streamEnd = field(name(s, t, "stream_end"), SQLDataType.BIGINT);
      turn = field(name(s, t, "turn"), SQLDataType.BIGINT);
      pending = field(name(s, t, "pending"), SQLDataType.BOOLEAN);
    }
  }

  /** {@code <schema>.handlers}. */
  public static final class Handlers {
    public final Table<?> table;
    public final Field<String> handlerKey;
    public final Field<Long> horizon;
    public final Field<Long[]> deferred;
    public final Field<String> startPosition;

    private Handlers(String s) {
      String t = "handlers";
      table = table(name(s, t));
      handlerKey = field(name(s, t, "handler_key"), SQLDataType.CLOB);
      horizon = field(name(s, t, "horizon"), SQLDataType.BIGINT);
      deferred = field(name(s, t, "deferred"), SQLDataType.BIGINT.array());
      startPosition = field(name(s, t, "start_position"), SQLDataType.CLOB);
    }
  }

  /** {@code <schema>.stream_keys}. */
  public static final class StreamKeys {
    public final Table<?> table;
    public final Field<String> key;
    public final Field<Long> streamId;

    private StreamKeys(String s) {
      String t = "stream_keys";
      table = table(name(s, t));
      key = field(name(s, t, "stream_key"), SQLDataType.CLOB);
      streamId = field(name(s, t, "stream_id"), SQLDataType.BIGINT);
    }
  }

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
