package org.messagepump.commands;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.messagepump.commands.internal.CommandQueries;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.LeaseQueries;
import org.messagepump.commands.internal.RetentionQueries;
import org.messagepump.core.Limits;
import org.messagepump.core.Pause;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Migrations;
import org.messagepump.core.spi.Pauses;
import org.messagepump.core.spi.Transactions;

/**
 * The operator face of the command queue: everything that reads or changes the stored state of a
 * queue's schema without a codec. Migrate the schema and print the grants a role needs; read the
 * depth; pause and resume command types; list the commands running under a lease; operate on dead
 * letters, pending commands and schedules; read the history. Commands are produced and drivers made
 * by the producer face, {@link CommandQueue}, whose {@link CommandQueue#operations()} returns the
 * operator of its schema.
 *
 * <pre>{@code
 * CommandOperations operations = CommandOperations.of(dataSource);
 * operations.migrate();
 * operations.pauseType("PlaceOrder", "supplier down");
 * operations.deadLetters().retryAll("PlaceOrder");
 * }</pre>
 *
 * <p>Each call runs in a transaction of its own. Arguments are checked before anything is sent; a
 * bad one is refused with {@link IllegalArgumentException} naming it.
 */
public final class CommandOperations {

  /** The most leased commands {@link #leasedCommands} lists at once. */
  public static final int MAX_LEASED_LIST_LIMIT = 10_000;

  /** The largest page {@link #history} reads. */
  public static final int MAX_HISTORY_PAGE = 1000;

  private final DataSource dataSource;
  private final CommandTables tables;
  private final Meters meters;
  private final DeadLetters deadLetters;
  private final Schedules schedules;
  private final PendingCommands pending;

  private CommandOperations(
      DataSource dataSource,
      CommandTables tables,
      Meters meters,
      Enqueuer enqueuer,
      IntConsumer enqueued) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.meters = meters;
    this.deadLetters = new DeadLetters(dataSource, tables, meters);
    this.schedules = new Schedules(dataSource, tables, enqueuer, enqueued);
    this.pending = new PendingCommands(dataSource, tables);
  }

  /**
   * The operator of the queue in the default schema, {@value CommandQueue#DEFAULT_SCHEMA}, on
   * {@code dataSource} (a pool such as HikariCP).
   */
  public static CommandOperations of(DataSource dataSource) {
    return of(dataSource, CommandQueue.DEFAULT_SCHEMA);
  }

  /**
   * The operator of the queue in {@code schema} on {@code dataSource}. The schema name must match
   * {@code [a-z_][a-z0-9_]*}, be at most {@value Inputs#MAX_SCHEMA_LENGTH} characters long and not
   * be a PostgreSQL system schema ({@link Inputs#schema}), else {@link IllegalArgumentException}.
   * Schedules triggered or fired through it signal the queue's wake channel; they carry no producer
   * hook's headers and count in no meters.
   */
  public static CommandOperations of(DataSource dataSource, String schema) {
    if (dataSource == null) {
      throw new IllegalArgumentException("dataSource must not be null");
    }
    if (schema == null) {
      throw new IllegalArgumentException("schema must not be null");
    }
    CommandTables tables = CommandTables.of(Inputs.schema("schema", schema));
    Enqueuer enqueuer =
        new Enqueuer(
            null,
            tables,
            Limits.defaults(),
            CommandQueue.wakeChannel(tables.schema()),
            CommandQueue.DEFAULT_NOTIFICATIONS,
            null);
    return new CommandOperations(dataSource, tables, Meters.none(), enqueuer, n -> {});
  }

  /**
   * The operator of {@code queue}: its dead-letter meters register in the queue's meters, and the
   * commands its schedules enqueue go through the queue's enqueuer, count in its meters and run its
   * enqueue listeners.
   */
  static CommandOperations of(
      DataSource dataSource,
      CommandTables tables,
      Meters meters,
      Enqueuer enqueuer,
      IntConsumer enqueued) {
    return new CommandOperations(dataSource, tables, meters, enqueuer, enqueued);
  }

  /** The schema of the queue's tables. */
  public String schema() {
    return tables.schema();
  }

  /**
   * Applies the command queue's migrations to this operator's schema (created if missing; Flyway,
   * history table {@code commandqueue_flyway_history} in that schema); idempotent, and safe when
   * several processes start together (they serialize on an advisory lock). Needs two connections
   * from the pool while it runs.
   *
   * @return the number of migrations this call applied
   */
  public int migrate() {
    String s = tables.schema();
    return Migrations.migrate(
        dataSource,
        s,
        CommandTables.HISTORY_TABLE,
        "classpath:db/" + CommandTables.SCHEMA,
        Map.of("schema", s));
  }

  /**
   * The statements granting {@code role} what a queue, its pumps and its operations need in this
   * operator's schema, and nothing more: {@code USAGE} on the schema and {@code SELECT, INSERT,
   * UPDATE, DELETE} on its tables, {@code USAGE} on the sequence of lease mode's fencing tokens.
   * The owner runs {@link #migrate()} and these; the role runs the application. Identifiers are
   * quoted; a role name that is null, empty, holds NUL or is over {@link Limits#MAX_KEY_BYTES}
   * bytes is refused with {@link IllegalArgumentException}. Nothing is sent to the database.
   */
  public List<String> grantStatements(String role) {
    if (role == null) {
      throw new IllegalArgumentException("role must not be null");
    }
    Inputs.key("role", role);
    DSLContext render = DSL.using(SQLDialect.POSTGRES);
    String quotedRole = render.render(DSL.name(role));
    String quotedSchema = render.render(DSL.name(tables.schema()));
    List<String> names = new ArrayList<>();
    for (String table : CommandTables.TABLE_NAMES) {
      names.add(render.render(DSL.name(tables.schema(), table)));
    }
    return List.of(
        "GRANT USAGE ON SCHEMA " + quotedSchema + " TO " + quotedRole,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE "
            + String.join(", ", names)
            + " TO "
            + quotedRole,
        "GRANT USAGE ON SEQUENCE "
            + render.render(DSL.name(tables.schema(), "lease_tokens"))
            + " TO "
            + quotedRole);
  }

  /**
   * Per-type counts of due, delayed and leased commands and dead letters (database clock), in one
   * statement over the pending commands.
   */
  public QueueDepth depth() {
    Map<String, CommandQueries.TypeCounts> counts =
        Transactions.inNew(
            dataSource, "reading the queue depth", tx -> CommandQueries.depth(tx.dsl(), tables));
    Map<String, QueueDepth.TypeDepth> byType = new HashMap<>();
    counts.forEach(
        (type, c) ->
            byType.put(
                type, new QueueDepth.TypeDepth(c.due(), c.delayed(), c.deadLetters(), c.leased())));
    return new QueueDepth(byType);
  }

  /**
   * Pauses {@code type} cluster-wide: from the next poll on, no pump of any process acquires
   * commands of that type (the claim statement skips it; commands already being handled finish).
   * Enqueueing goes on. Returns true when the type was not paused yet. A type name that is null,
   * empty, holds NUL or is over {@link Limits#MAX_KEY_BYTES} bytes, or a reason over {@link
   * Limits#MAX_REASON_CHARS} UTF-8 bytes, is refused with {@link IllegalArgumentException} before
   * anything is sent.
   */
  public boolean pauseType(String type, String reason) {
    tables.pauses.checkName(type);
    Pauses.checkReason(reason);
    return Transactions.inNew(
        dataSource, "pausing a command type", tx -> tables.pauses.pause(tx.dsl(), type, reason));
  }

  /**
   * Resumes a type paused with {@link #pauseType}; true when it was paused.
   *
   * @throws IllegalArgumentException for a bad type name, as {@link #pauseType}; nothing is sent
   */
  public boolean resumeType(String type) {
    tables.pauses.checkName(type);
    return Transactions.inNew(
        dataSource, "resuming a command type", tx -> tables.pauses.resume(tx.dsl(), type));
  }

  /** The types paused cluster-wide, by name; {@link Pause#name()} is the command type. */
  public List<Pause> pausedTypes() {
    return Transactions.inNew(
        dataSource, "listing paused command types", tx -> tables.pauses.list(tx.dsl()));
  }

  /**
   * Up to {@code limit} commands running under a lease (lease mode), of {@code type} (null: every
   * type), the lease that runs out first first. A type name that is empty, holds NUL or is too
   * long, or a limit outside 1..{@value #MAX_LEASED_LIST_LIMIT}, is refused with {@link
   * IllegalArgumentException} before anything is sent.
   */
  public List<LeasedCommand> leasedCommands(String type, int limit) {
    Inputs.optionalKey("type", type);
    if (limit < 1 || limit > MAX_LEASED_LIST_LIMIT) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_LEASED_LIST_LIMIT + ": " + limit);
    }
    return Transactions.inNew(
            dataSource,
            "listing leased commands",
            tx -> LeaseQueries.list(tx.dsl(), tables, type, limit))
        .stream()
        .map(
            l ->
                new LeasedCommand(
                    l.messageId(),
                    l.type(),
                    l.holder(),
                    l.expiresAt(),
                    l.failures() + 1,
                    l.token(),
                    l.priority()))
        .toList();
  }

  /** Operations on parked commands: list, count, retry, discard. */
  public DeadLetters deadLetters() {
    return deadLetters;
  }

  /**
   * The recurring commands of this schema: list, pause, resume, trigger, remove, fire the due
   * ticks. They are defined with {@link CommandQueue#defineSchedule}, which encodes their command,
   * and their ticks enqueued by a {@link CommandScheduler}.
   */
  public Schedules schedules() {
    return schedules;
  }

  /**
   * One pending command at a time, by message id or idempotency key: find it and see whether it
   * waits or runs, cancel it, or move it to another time. A command a running handler holds is left
   * alone and answered {@code HELD}.
   */
  public PendingCommands pending() {
    return pending;
  }

  /**
   * The newest handled commands of the history (docs/commands.md, "History"), newest first: at most
   * {@code limit} (1 to {@value #MAX_HISTORY_PAGE}) handled before {@code before} (null: the
   * newest), read on the history's index. Empty when the queue never kept a history.
   */
  public List<HandledCommand> history(HandledCommand before, int limit) {
    if (limit < 1 || limit > MAX_HISTORY_PAGE) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_HISTORY_PAGE + ": " + limit);
    }
    return Transactions.inNew(
        dataSource,
        "reading the command history",
        tx ->
            RetentionQueries.history(
                    tx.dsl(),
                    tables,
                    before == null ? null : before.handledAt(),
                    before == null ? null : before.historyId(),
                    limit)
                .stream()
                .map(
                    h ->
                        new HandledCommand(
                            h.historyId(),
                            h.messageId(),
                            h.type(),
                            h.idempotencyKey(),
                            h.attempts(),
                            Duration.ofNanos(h.handlingMicros() * 1000),
                            h.handledAt()))
                .toList());
  }

  DataSource dataSource() {
    return dataSource;
  }

  CommandTables tables() {
    return tables;
  }

  Meters meters() {
    return meters;
  }

  @Override
  public String toString() {
    return "CommandOperations[schema=" + tables.schema() + "]";
  }
}
