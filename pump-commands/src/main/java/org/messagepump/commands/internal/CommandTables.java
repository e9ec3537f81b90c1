package org.messagepump.commands.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Param;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Pauses;

/**
 * jOOQ names of one command-queue schema (see {@code db/commandqueue/V1__*.sql}): the tables are
 * per instance, qualified with the schema the queue was built for and quoted by jOOQ; the columns
 * are the same in every schema.
 */
public final class CommandTables {

  /** The default schema. */
  public static final String SCHEMA = "commandqueue";

  /** Flyway's history table, in the queue's schema (so every schema has its own). */
  public static final String HISTORY_TABLE = "commandqueue_flyway_history";

  /** The table names, in the order {@code grantStatements} lists them. */
  public static final java.util.List<String> TABLE_NAMES =
      java.util.List.of(
          "commands",
          "idempotency_keys",
          "dead_letters",
          "paused_types",
          "schedules",
          "command_history");

  private static final CommandTables DEFAULT = new CommandTables(SCHEMA);

  private final String schema;
  private final org.messagepump.core.spi.StatementSets<CommandTables> statements =
      new org.messagepump.core.spi.StatementSets<>(this);

  /** Pending commands. */
  public final Table<Record> commands;

  /** Idempotency keys (kept forever, while pending or for a period: V6). */
  public final Table<Record> idempotencyKeys;

  /** Parked commands. */
  public final Table<Record> deadLetters;

  /** Command types paused cluster-wide (V2, table {@code paused_types}). */
  public final Pauses pauses;

  /** Recurring commands (V3). */
  public final Table<Record> schedules;

  /** Handled commands, when the queue keeps a history (V6). */
  public final Table<Record> commandHistory;

  /** The fencing tokens of lease mode (V4). */
  public final org.jooq.Sequence<Long> leaseTokens;

  private CommandTables(String schema) {
    this.schema = schema;
    this.commands = DSL.table(DSL.name(schema, "commands"));
    this.idempotencyKeys = DSL.table(DSL.name(schema, "idempotency_keys"));
    this.leaseTokens = DSL.sequence(DSL.name(schema, "lease_tokens"), SQLDataType.BIGINT);
    this.deadLetters = DSL.table(DSL.name(schema, "dead_letters"));
    // Not MESSAGE_TYPE: DEFAULT is built before the static fields declared below it.
    this.pauses =
        Pauses.of(
            DSL.table(DSL.name(schema, "paused_types")),
            DSL.field(DSL.name("message_type"), SQLDataType.CLOB),
            "type");
    this.schedules = DSL.table(DSL.name(schema, "schedules"));
    this.commandHistory = DSL.table(DSL.name(schema, "command_history"));
  }

  /** The tables of {@code schema}, validated by {@link #schemaName}. */
  public static CommandTables of(String schema) {
    String s = schemaName(schema);
    return s.equals(SCHEMA) ? DEFAULT : new CommandTables(s);
  }

  /** The tables of the default schema. */
  public static CommandTables defaults() {
    return DEFAULT;
  }

  /** The schema name. */
  public String schema() {
    return schema;
  }

  /**
   * The statements of one kind for this schema ({@code kind}: a query class's holder of rendered
   * statements), made by {@code render} on first use and kept with these tables: every driver and
   * operation of the queue shares them, and every queue of the default schema. Kept per schema, not
   * per driver: a driver rendering its own through jOOQ when built was a burst of rendering and of
   * JIT compilation at every driver's start (docs/performance-notes.md).
   */
  public <T> T statements(Class<T> kind, java.util.function.Function<CommandTables, T> render) {
    return statements.get(kind, render);
  }

  /**
   * Checks a schema name ({@link org.messagepump.core.spi.Inputs#schema}): a lower-case identifier
   * of at most {@value Inputs#MAX_SCHEMA_LENGTH} characters, not a PostgreSQL system schema; else
   * {@link IllegalArgumentException}.
   */
  public static String schemaName(String schema) {
    return Inputs.schema("schema", schema);
  }

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

  /** Column {@code priority} of pending commands and dead letters: 0 to 9 (V5). */
  public static final Field<Short> PRIORITY = DSL.field(DSL.name("priority"), SQLDataType.SMALLINT);

  /**
   * Column {@code claim_rank} of pending commands, generated: {@code deliver_at} less one minute
   * per level of priority (V5). The claim serves the lowest rank first.
   */
  public static final Field<Instant> CLAIM_RANK =
      DSL.field(DSL.name("claim_rank"), SQLDataType.INSTANT);

  /** Column {@code idempotency_key}. */
  public static final Field<String> IDEMPOTENCY_KEY =
      DSL.field(DSL.name("idempotency_key"), SQLDataType.CLOB);

  /** Column {@code last_error} of dead letters. */
  public static final Field<String> LAST_ERROR =
      DSL.field(DSL.name("last_error"), SQLDataType.CLOB);

  /** Column {@code parked_at} of dead letters. */
  public static final Field<Instant> PARKED_AT =
      DSL.field(DSL.name("parked_at"), SQLDataType.INSTANT);

  /** Column {@code lease_token} of pending commands: the fencing token of a lease (V4). */
  public static final Field<Long> LEASE_TOKEN =
      DSL.field(DSL.name("lease_token"), SQLDataType.BIGINT);

  /** Column {@code leased_by} of pending commands: the holder of a lease, null when not leased. */
  public static final Field<String> LEASED_BY = DSL.field(DSL.name("leased_by"), SQLDataType.CLOB);

  /** Column {@code expires_at} of idempotency keys: null for a key kept forever (V6). */
  public static final Field<Instant> EXPIRES_AT =
      DSL.field(DSL.name("expires_at"), SQLDataType.INSTANT);

  /** Column {@code release_key} of pending commands: handling or parking releases the key (V6). */
  public static final Field<Boolean> RELEASE_KEY =
      DSL.field(DSL.name("release_key"), SQLDataType.BOOLEAN);

  /** Column {@code history_id} of the command history. */
  public static final Field<Long> HISTORY_ID =
      DSL.field(DSL.name("history_id"), SQLDataType.BIGINT);

  /** Column {@code attempts} of the command history. */
  public static final Field<Integer> ATTEMPTS =
      DSL.field(DSL.name("attempts"), SQLDataType.INTEGER);

  /** Column {@code handling_micros} of the command history. */
  public static final Field<Long> HANDLING_MICROS =
      DSL.field(DSL.name("handling_micros"), SQLDataType.BIGINT);

  /** Column {@code handled_at} of the command history. */
  public static final Field<Instant> HANDLED_AT =
      DSL.field(DSL.name("handled_at"), SQLDataType.INSTANT);

  /** {@code clock_timestamp()}: the database clock now, for times processes agree on. */
  public static final Field<Instant> CLOCK_TIMESTAMP = DatabaseClock.now();

  /**
   * {@code statement_timestamp()}: the database clock at the start of the statement. Stable within
   * a statement, so PostgreSQL can use it as an index condition ({@code clock_timestamp()} is
   * volatile and could only filter).
   */
  public static final Field<Instant> STATEMENT_TIMESTAMP = DatabaseClock.statementTime();

  /**
   * {@code clock_timestamp()} plus the interval of text parameter {@code delay} (see {@link
   * #interval}): the due time of a postponement.
   */
  static Field<Instant> after(Param<String> delay) {
    return CLOCK_TIMESTAMP.plus(delay.cast(SQLDataType.INTERVAL));
  }

  /**
   * A delay as the text of the interval {@link DatabaseClock#after} binds for it (jOOQ's {@code
   * DayToSecond}): whole days as days, the rest as hours, minutes and seconds, in ISO 8601 ({@code
   * P2DT3H4M5.5S}), text PostgreSQL parses the same in any session. For a parameter of {@link
   * #after(Param)}, or an element of a {@code text[]} cast to {@code interval[]}. Checked as {@link
   * Inputs#delay}.
   */
  public static String interval(Duration delay) {
    Inputs.delay("delay", delay);
    long days = delay.toDays();
    return "P" + days + "D" + delay.minusDays(days).toString().substring(1);
  }
}
