package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.table;

import java.time.OffsetDateTime;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/** The jOOQ names of the {@code eventstream} schema: the one place its tables are spelled. */
public final class Tables {

  /** The schema name. */
  public static final String SCHEMA = "eventstream";

  private Tables() {}

  /** {@code eventstream.streams}. */
  public static final class Streams {
    public static final Table<?> T = table(name(SCHEMA, "streams"));
    public static final Field<Long> ID = field(name(SCHEMA, "streams", "id"), SQLDataType.BIGINT);
    public static final Field<Long> NEXT_OFFSET =
        field(name(SCHEMA, "streams", "next_offset"), SQLDataType.BIGINT);
    public static final Field<OffsetDateTime> CREATED_AT =
        field(name(SCHEMA, "streams", "created_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

    private Streams() {}
  }

  /** {@code eventstream.events}. */
  public static final class Events {
    public static final Table<?> T = table(name(SCHEMA, "events"));
    public static final Field<UUID> MESSAGE_ID =
        field(name(SCHEMA, "events", "message_id"), SQLDataType.UUID);
    public static final Field<Long> STREAM_ID =
        field(name(SCHEMA, "events", "stream_id"), SQLDataType.BIGINT);
    public static final Field<Long> OFFSET =
        field(name(SCHEMA, "events", "stream_offset"), SQLDataType.BIGINT);
    public static final Field<String> TYPE =
        field(name(SCHEMA, "events", "type"), SQLDataType.CLOB);
    public static final Field<String> CORRELATION_ID =
        field(name(SCHEMA, "events", "correlation_id"), SQLDataType.CLOB);
    public static final Field<String> CAUSATION_ID =
        field(name(SCHEMA, "events", "causation_id"), SQLDataType.CLOB);
    public static final Field<JSONB> HEADERS =
        field(name(SCHEMA, "events", "headers"), SQLDataType.JSONB);
    public static final Field<byte[]> PAYLOAD =
        field(name(SCHEMA, "events", "payload"), SQLDataType.BLOB);
    public static final Field<OffsetDateTime> RECORDED_AT =
        field(name(SCHEMA, "events", "recorded_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

    private Events() {}
  }

  /** {@code eventstream.stream_types}. */
  public static final class StreamTypes {
    public static final Table<?> T = table(name(SCHEMA, "stream_types"));
    public static final Field<Long> STREAM_ID =
        field(name(SCHEMA, "stream_types", "stream_id"), SQLDataType.BIGINT);
    public static final Field<String> TYPE =
        field(name(SCHEMA, "stream_types", "type"), SQLDataType.CLOB);
    public static final Field<Long> LATEST_OFFSET =
        field(name(SCHEMA, "stream_types", "latest_offset"), SQLDataType.BIGINT);

    private StreamTypes() {}
  }

  /** {@code eventstream.handler_checkpoints}. */
  public static final class Checkpoints {
    public static final Table<?> T = table(name(SCHEMA, "handler_checkpoints"));
    public static final Field<String> HANDLER_KEY =
        field(name(SCHEMA, "handler_checkpoints", "handler_key"), SQLDataType.CLOB);
    public static final Field<Long> STREAM_ID =
        field(name(SCHEMA, "handler_checkpoints", "stream_id"), SQLDataType.BIGINT);
    public static final Field<Long> OFFSET =
        field(name(SCHEMA, "handler_checkpoints", "checkpoint_offset"), SQLDataType.BIGINT);
    public static final Field<Integer> FAILURES =
        field(name(SCHEMA, "handler_checkpoints", "failures"), SQLDataType.INTEGER);
    public static final Field<OffsetDateTime> RESUME_AT =
        field(name(SCHEMA, "handler_checkpoints", "resume_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
    public static final Field<OffsetDateTime> PARKED_AT =
        field(name(SCHEMA, "handler_checkpoints", "parked_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
    public static final Field<String> PARKED_REASON =
        field(name(SCHEMA, "handler_checkpoints", "parked_reason"), SQLDataType.CLOB);
    public static final Field<OffsetDateTime> UPDATED_AT =
        field(name(SCHEMA, "handler_checkpoints", "updated_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);

    private Checkpoints() {}
  }

  /** The database clock, {@code clock_timestamp()}: the time every process agrees on. */
  public static Field<OffsetDateTime> clockTimestamp() {
    return DSL.function("clock_timestamp", SQLDataType.TIMESTAMPWITHTIMEZONE);
  }
}
