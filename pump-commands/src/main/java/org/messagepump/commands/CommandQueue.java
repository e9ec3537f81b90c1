package org.messagepump.commands;

import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.messagepump.commands.internal.CommandQueries;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.LeaseQueries;
import org.messagepump.commands.internal.PauseQueries;
import org.messagepump.core.Inputs;
import org.messagepump.core.Limits;
import org.messagepump.core.Meters;
import org.messagepump.core.MicrometerMeters;
import org.messagepump.core.Migrations;
import org.messagepump.core.Transactions;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.MessageCodec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The durable command queue in schema {@code commandqueue} (or another one, see {@link
 * Builder#schema}): enqueue commands inside the caller's transaction or on their own, with delays,
 * idempotency keys, correlation and causation ids and headers; read the depth; operate on dead
 * letters; and make the {@link CommandDriver} that a {@link org.messagepump.core.MessagePump}
 * pumps.
 *
 * <pre>{@code
 * CommandQueue.migrate(dataSource);
 * CommandQueue queue = CommandQueue.create(dataSource, JsonMessageCodec.of(types));
 * queue.enqueue(new PlaceOrder("o-1"), EnqueueOptions.defaults().withIdempotencyKey("o-1"));
 * }</pre>
 */
public final class CommandQueue {

  /** Default largest encoded payload: 1 MiB. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

  /** Longest type name stored. */
  public static final int MAX_TYPE_LENGTH = 200;

  private static final Logger log = LoggerFactory.getLogger(CommandQueue.class);

  /** The default schema, {@value}. */
  public static final String DEFAULT_SCHEMA = CommandTables.SCHEMA;

  /** Default for signalling the queue's {@link #wakeChannel()} on enqueue: on. */
  public static final boolean DEFAULT_NOTIFICATIONS = true;

  private final DataSource dataSource;
  private final MessageCodec codec;
  private final Limits limits;
  private final CommandTables tables;
  private final String wakeChannel;
  private final Enqueuer enqueuer;
  private final Meters meters;
  private final Meters.Counter enqueued;
  private final Meters.Counter duplicates;
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
  private final DeadLetters deadLetters;
  private final QueueGauges gauges;
  private final Schedules schedules;
  private final PendingCommands pending;
  private final boolean history;

  private CommandQueue(Builder b) {
    this.dataSource = b.dataSource;
    this.codec = b.codec;
    this.limits = b.limits;
    this.tables = b.tables;
    this.wakeChannel = wakeChannel(tables.schema());
    this.enqueuer =
        new Enqueuer(codec, tables, limits, wakeChannel, b.notifications, b.producerHook);
    this.meters = b.meters != null ? b.meters : Meters.none();
    this.history = b.history;
    this.enqueued =
        meters.counter(
            "messagepump.commands.enqueued", "Commands enqueued, by result", "result", "enqueued");
    this.duplicates =
        meters.counter(
            "messagepump.commands.enqueued", "Commands enqueued, by result", "result", "duplicate");
    this.deadLetters = new DeadLetters(dataSource, tables, meters);
    this.gauges = new QueueGauges(dataSource, tables, meters);
    this.schedules = new Schedules(this, dataSource, tables, enqueuer);
    this.pending = new PendingCommands(dataSource, tables);
  }

  /**
   * Applies the {@code commandqueue} migrations (Flyway, history table {@code
   * commandqueue_flyway_history}); idempotent, and safe when several processes start together (they
   * serialize on an advisory lock). Needs two connections from the pool while it runs.
   *
   * @return the number of migrations this call applied
   */
  public static int migrate(DataSource dataSource) {
    return migrate(dataSource, DEFAULT_SCHEMA);
  }

  /**
   * Applies the migrations to {@code schema} (created if missing; history table {@code
   * commandqueue_flyway_history} in that schema), as {@link #migrate(DataSource)}. The schema name
   * must match {@code [a-z_][a-z0-9_]{0,40}}, else {@link IllegalArgumentException}.
   *
   * @return the number of migrations this call applied
   */
  public static int migrate(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource");
    String s = CommandTables.of(schema).schema();
    return Migrations.migrate(
        dataSource,
        s,
        CommandTables.HISTORY_TABLE,
        "classpath:db/" + CommandTables.SCHEMA,
        Map.of("schema", s));
  }

  /**
   * The statements granting {@code role} what a queue, its pumps and its dead-letter operations
   * need in {@code schema}, and nothing more: {@code USAGE} on the schema and {@code SELECT,
   * INSERT, UPDATE, DELETE} on its tables, {@code USAGE} on the sequence of lease mode's fencing
   * tokens. The owner runs {@link #migrate(DataSource, String)} and these; the role runs the
   * application. Identifiers are quoted; a bad schema name or a role name that is empty, holds NUL
   * or is over {@link Limits#MAX_KEY_BYTES} bytes is refused with {@link IllegalArgumentException}.
   */
  public static List<String> grantStatements(String schema, String role) {
    CommandTables t = CommandTables.of(schema);
    Inputs.key("role", role);
    org.jooq.DSLContext render = org.jooq.impl.DSL.using(org.jooq.SQLDialect.POSTGRES);
    String quotedRole = render.render(org.jooq.impl.DSL.name(role));
    String quotedSchema = render.render(org.jooq.impl.DSL.name(t.schema()));
    List<String> tables = new java.util.ArrayList<>();
    for (String table : CommandTables.TABLE_NAMES) {
      tables.add(render.render(org.jooq.impl.DSL.name(t.schema(), table)));
    }
    return List.of(
        "GRANT USAGE ON SCHEMA " + quotedSchema + " TO " + quotedRole,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE "
            + String.join(", ", tables)
            + " TO "
            + quotedRole,
        "GRANT USAGE ON SEQUENCE "
            + render.render(org.jooq.impl.DSL.name(t.schema(), "lease_tokens"))
            + " TO "
            + quotedRole);
  }

  /** The wake channel of a queue in {@code schema}. */
  static String wakeChannel(String schema) {
    return org.messagepump.core.WakeSignal.channel("commands", schema);
  }

  /** A queue on {@code dataSource} encoding commands with {@code codec}, other options default. */
  public static CommandQueue create(DataSource dataSource, MessageCodec codec) {
    return builder(dataSource).codec(codec).build();
  }

  /** A builder for a queue on {@code dataSource} (a pool such as HikariCP). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
  }

  /** The codec commands are encoded and decoded with. */
  public MessageCodec codec() {
    return codec;
  }

  /** The largest encoded payload accepted. */
  public int maxPayloadBytes() {
    return limits.maxPayloadBytes();
  }

  /** The input limits enqueues are checked against. */
  public Limits limits() {
    return limits;
  }

  /** The schema of this queue's tables. */
  public String schema() {
    return tables.schema();
  }

  /**
   * The NOTIFY channel this queue's enqueues signal (once per transaction) and its pumps listen on,
   * so an idle pump wakes at once instead of at its next poll: {@code
   * messagepump_commands_<schema>} ({@link org.messagepump.core.WakeSignal#channel}).
   */
  public String wakeChannel() {
    return wakeChannel;
  }

  /** Enqueues a command, due now, in a transaction of its own. */
  public EnqueueResult enqueue(Object command) {
    return enqueue(command, EnqueueOptions.defaults());
  }

  /** Enqueues a command with options in a transaction of its own. */
  public EnqueueResult enqueue(Object command, EnqueueOptions options) {
    return enqueueAll(List.of(NewCommand.of(command, options))).get(0);
  }

  /** Enqueues a command inside the caller's transaction on {@code connection} (not committed). */
  public EnqueueResult enqueue(Connection connection, Object command, EnqueueOptions options) {
    return enqueue(Tx.of(present(connection, "connection")), command, options);
  }

  /** Enqueues a command inside the transaction {@code tx} (e.g. a handler's); not committed. */
  public EnqueueResult enqueue(Tx tx, Object command, EnqueueOptions options) {
    return enqueueAll(tx, List.of(NewCommand.of(command, options))).get(0);
  }

  /** Enqueues an already-encoded command (type name + payload) in a transaction of its own. */
  public EnqueueResult enqueueRaw(String type, byte[] payload, EnqueueOptions options) {
    return enqueueAll(List.of(NewCommand.raw(type, payload, options))).get(0);
  }

  /** Enqueues an already-encoded command inside the caller's transaction on {@code connection}. */
  public EnqueueResult enqueueRaw(
      Connection connection, String type, byte[] payload, EnqueueOptions options) {
    return enqueueAll(
            Tx.of(present(connection, "connection")),
            List.of(NewCommand.raw(type, payload, options)))
        .get(0);
  }

  /**
   * Enqueues many commands in a transaction of its own with multi-row inserts (one statement per
   * 5,000 commands). Every command is validated before anything is written. Results are in input
   * order.
   */
  public List<EnqueueResult> enqueueAll(List<? extends NewCommand> commands) {
    List<EncodedCommand> encoded = enqueuer.encode(commands);
    if (encoded.isEmpty()) {
      return List.of();
    }
    List<EnqueueResult> results =
        Transactions.inNew(dataSource, "enqueueing commands", tx -> enqueuer.insert(tx, encoded));
    count(results);
    notifyListeners();
    return results;
  }

  /** Enqueues many commands inside the caller's transaction on {@code connection}. */
  public List<EnqueueResult> enqueueAll(
      Connection connection, List<? extends NewCommand> commands) {
    return enqueueAll(Tx.of(present(connection, "connection")), commands);
  }

  /** Enqueues many commands inside the transaction {@code tx}; not committed. */
  public List<EnqueueResult> enqueueAll(Tx tx, List<? extends NewCommand> commands) {
    present(tx, "tx");
    List<EncodedCommand> encoded = enqueuer.encode(commands);
    if (encoded.isEmpty()) {
      return List.of();
    }
    List<EnqueueResult> results =
        Transactions.inCaller(tx, "enqueueing commands", t -> enqueuer.insert(t, encoded));
    count(results);
    return results;
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
    Inputs.key("type", type);
    if (reason != null) {
      Inputs.text("reason", reason, Limits.MAX_REASON_CHARS);
    }
    return Transactions.inNew(
        dataSource,
        "pausing a command type",
        tx -> PauseQueries.pause(tx.dsl(), tables, type, reason));
  }

  /** Resumes a type paused with {@link #pauseType}; true when it was paused. */
  public boolean resumeType(String type) {
    Inputs.key("type", type);
    return Transactions.inNew(
        dataSource, "resuming a command type", tx -> PauseQueries.resume(tx.dsl(), tables, type));
  }

  /** The types paused cluster-wide, by name. */
  public List<PausedType> pausedTypes() {
    return Transactions.inNew(
            dataSource, "listing paused command types", tx -> PauseQueries.list(tx.dsl(), tables))
        .stream()
        .map(r -> new PausedType(r.type(), r.pausedAt(), r.reason()))
        .toList();
  }

  /** The most leased commands {@link #leasedCommands} lists at once. */
  public static final int MAX_LEASED_LIST_LIMIT = 10_000;

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

  /** Operations on parked commands: list, retry, discard. */
  public DeadLetters deadLetters() {
    return deadLetters;
  }

  /**
   * The recurring commands of this queue's schema: define, list, pause, resume, trigger. Their
   * ticks are enqueued by a {@link CommandScheduler}.
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

  /** A driver pumping this queue's commands of the handlers' types. */
  public CommandDriver driver(CommandHandlers handlers) {
    return CommandDriver.create(this, handlers);
  }

  /**
   * A driver pumping this queue's commands of the handlers' types in lease mode: no transaction is
   * held while a handler runs (docs/leases.md). See {@link CommandDriver#leased}.
   */
  public CommandDriver leasedDriver(CommandHandlers handlers, java.time.Duration lease) {
    return CommandDriver.leased(this, handlers, lease);
  }

  /**
   * Registers a hook run after each enqueue on the queue's own transaction has committed (for
   * example {@code pump::wake} in the same process). Hooks must be quick; their exceptions are
   * logged and ignored. Enqueues in the caller's transaction do not run hooks.
   */
  public void addEnqueueListener(Runnable listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  /** Removes a hook added by {@link #addEnqueueListener}. */
  public void removeEnqueueListener(Runnable listener) {
    listeners.remove(listener);
  }

  Meters meters() {
    return meters;
  }

  QueueGauges gauges() {
    return gauges;
  }

  /** Whether this queue's drivers record handled commands in the history. */
  public boolean keepsHistory() {
    return history;
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
            org.messagepump.commands.internal.RetentionQueries.history(
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

  /** The largest page {@link #history} reads. */
  public static final int MAX_HISTORY_PAGE = 1000;

  DataSource dataSource() {
    return dataSource;
  }

  CommandTables tables() {
    return tables;
  }

  private static <T> T present(T value, String name) {
    if (value == null) {
      throw new IllegalArgumentException(name + " must not be null");
    }
    return value;
  }

  /** Counts commands a schedule enqueued in a committed transaction and runs the hooks. */
  void enqueued(int count) {
    enqueued.increment(count);
    notifyListeners();
  }

  private void count(List<EnqueueResult> results) {
    long dup = results.stream().filter(EnqueueResult::isDuplicate).count();
    duplicates.increment(dup);
    enqueued.increment(results.size() - dup);
  }

  private void notifyListeners() {
    for (Runnable r : listeners) {
      try {
        r.run();
      } catch (RuntimeException e) {
        log.warn("commandqueue: an enqueue listener failed: {}", e.toString(), e);
      }
    }
  }

  /**
   * Builds a {@link CommandQueue}. Setters reject bad values with an {@link
   * IllegalArgumentException} naming the option; {@link #build()} rejects a missing codec.
   */
  public static final class Builder {
    private final DataSource dataSource;
    private MessageCodec codec;
    private boolean notifications = DEFAULT_NOTIFICATIONS;
    private Limits limits = Limits.defaults();
    private CommandTables tables = CommandTables.defaults();
    private Meters meters;
    private boolean history;
    private org.messagepump.core.ProducerHook producerHook;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The codec for typed commands (required), e.g. {@code JsonMessageCodec.of(types)}. */
    public Builder codec(MessageCodec codec) {
      if (codec == null) {
        throw new IllegalArgumentException("codec must not be null");
      }
      this.codec = codec;
      return this;
    }

    /**
     * Largest encoded payload, between 1 and {@link Limits#HARD_MAX_PAYLOAD_BYTES}. Default {@value
     * #DEFAULT_MAX_PAYLOAD_BYTES}. Shorthand for {@code limits(limits.withMaxPayloadBytes(n))}.
     */
    public Builder maxPayloadBytes(int maxPayloadBytes) {
      if (maxPayloadBytes < 1) {
        throw new IllegalArgumentException("maxPayloadBytes must be >= 1: " + maxPayloadBytes);
      }
      this.limits = limits.withMaxPayloadBytes(maxPayloadBytes);
      return this;
    }

    /**
     * The limits enqueued commands are checked against (payload size, header count and size).
     * Default {@link Limits#defaults()}.
     */
    public Builder limits(Limits limits) {
      if (limits == null) {
        throw new IllegalArgumentException("limits must not be null");
      }
      this.limits = limits;
      return this;
    }

    /**
     * The schema of the queue's tables, migrated with {@link CommandQueue#migrate(DataSource,
     * String)}; default {@value CommandQueue#DEFAULT_SCHEMA}. Queues in different schemas of one
     * database never see each other's commands or dead letters, and signal different wake channels.
     * Must match {@code [a-z_][a-z0-9_]{0,40}}.
     */
    public Builder schema(String schema) {
      this.tables = CommandTables.of(schema);
      return this;
    }

    /**
     * Whether an enqueue signals {@link CommandQueue#wakeChannel()} (PostgreSQL folds the signals
     * of one transaction into one). Default {@value CommandQueue#DEFAULT_NOTIFICATIONS}.
     */
    public Builder notifications(boolean notifications) {
      this.notifications = notifications;
      return this;
    }

    /** Where to register the {@code messagepump.commands.*} meters; none by default. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      if (meterRegistry == null) {
        throw new IllegalArgumentException("meterRegistry must not be null");
      }
      this.meters = MicrometerMeters.of(meterRegistry);
      return this;
    }

    /**
     * Whether the queue's drivers record each handled command (type, key, attempt, handling time)
     * in the history table, in the handling transaction: one insert per batch. Default {@code
     * false}. {@link CommandRetention} deletes old history.
     */
    public Builder history(boolean history) {
      this.history = history;
      return this;
    }

    /**
     * A hook called on every enqueue (single, batch, raw, delayed, in the caller's transaction or
     * in one of its own, and the {@link CommandScheduler}'s ticks), whose headers are added to the
     * commands' own (theirs win): for example {@code PumpTracing.producerHook()}, which traces each
     * enqueue and carries its context to the handler. None by default.
     */
    public Builder producerHook(org.messagepump.core.ProducerHook producerHook) {
      if (producerHook == null) {
        throw new IllegalArgumentException("producerHook must not be null");
      }
      this.producerHook = producerHook;
      return this;
    }

    /** The queue. */
    public CommandQueue build() {
      if (codec == null) {
        throw new IllegalStateException("codec is required");
      }
      return new CommandQueue(this);
    }
  }
}
