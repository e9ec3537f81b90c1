package org.messagepump.commands.internal;

import java.time.Instant;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/** jOOQ names of the {@code commandqueue} schema (see {@code db/commandqueue/V1__*.sql}). */
public final class CommandTables {

  /** The schema. */
  public static final String SCHEMA = "commandqueue";

  /** Pending commands. */
  public static final Table<Record> COMMANDS = DSL.table(DSL.name(SCHEMA, "commands"));

  /** Idempotency keys (kept forever). */
  public static final Table<Record> IDEMPOTENCY_KEYS =
      DSL.table(DSL.name(SCHEMA, "idempotency_keys"));

  /** Parked commands. */
  public static final Table<Record> DEAD_LETTERS = DSL.table(DSL.name(SCHEMA, "dead_letters"));

  /** Column {@code message_id}. */
  public static final Field<UUID> MESSAGE_ID = DSL.field(DSL.name("message_id"), SQLDataType.UUID);

  /** Column {@code message_type}. */
  public static final Field<String> MESSAGE_TYPE =
      DSL.field(DSL.name("message_type"), SQLDataType.CLOB);

  /** Column {@code correlation_id}. */
  public static final Field<String> CORRELATION_ID =
      DSL.field(DSL.name("correlation_id"), SQLDataType.CLOB);

  /** Column {@code causation_id}. */
  public static final Field<String> CAUSATION_ID =
      DSL.field(DSL.name("causation_id"), SQLDataType.CLOB);

  /** Column {@code headers}. */
  public static final Field<JSONB> HEADERS = DSL.field(DSL.name("headers"), SQLDataType.JSONB);

  /** Column {@code payload}. */
  public static final Field<byte[]> PAYLOAD = DSL.field(DSL.name("payload"), SQLDataType.BLOB);

  /** Column {@code failures}. */
  public static final Field<Integer> FAILURES =
      DSL.field(DSL.name("failures"), SQLDataType.INTEGER);

  /** Column {@code enqueued_at}. */
  public static final Field<Instant> ENQUEUED_AT =
      DSL.field(DSL.name("enqueued_at"), SQLDataType.INSTANT);

  /** Column {@code deliver_at}. */
  public static final Field<Instant> DELIVER_AT =
      DSL.field(DSL.name("deliver_at"), SQLDataType.INSTANT);

  /** Column {@code idempotency_key}. */
  public static final Field<String> IDEMPOTENCY_KEY =
      DSL.field(DSL.name("idempotency_key"), SQLDataType.CLOB);

  /** Column {@code last_error} of dead letters. */
  public static final Field<String> LAST_ERROR =
      DSL.field(DSL.name("last_error"), SQLDataType.CLOB);

  /** Column {@code parked_at} of dead letters. */
  public static final Field<Instant> PARKED_AT =
      DSL.field(DSL.name("parked_at"), SQLDataType.INSTANT);

  /** {@code clock_timestamp()}: the database clock now, for times processes agree on. */
  public static final Field<Instant> CLOCK_TIMESTAMP =
      DSL.function("clock_timestamp", SQLDataType.INSTANT);

  /**
   * {@code statement_timestamp()}: the database clock at the start of the statement. Stable within
   * a statement, so PostgreSQL can use it as an index condition ({@code clock_timestamp()} is
   * volatile and could only filter).
   */
  public static final Field<Instant> STATEMENT_TIMESTAMP =
      DSL.function("statement_timestamp", SQLDataType.INSTANT);

  private CommandTables() {}
}
