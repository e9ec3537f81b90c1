package org.messagepump.commands;

import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.core.Limits;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.MicrometerMeters;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The producer face of the command queue in schema {@code commandqueue} (or another one, see {@link
 * Builder#schema}): enqueue commands inside the caller's transaction or on their own, with delays,
 * idempotency keys, correlation and causation ids and headers, encoded with the queue's codec;
 * define schedules; and make the {@link CommandDriver} that a {@link
 * org.messagepump.core.engine.MessagePump} pumps from a {@link CommandHandlers} registry. What
 * needs no codec (migrations, grants, depth, paused types, dead letters, pending commands,
 * schedules' operation, history) is the operator face's, {@link CommandOperations}, which {@link
 * #operations()} returns.
 *
 * <pre>{@code
 * CommandOperations.of(dataSource).migrate();
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
  private final QueueGauges gauges;
  private final CommandOperations operations;
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
    this.operations = CommandOperations.of(dataSource, tables, meters, enqueuer, this::enqueued);
    this.gauges = new QueueGauges(dataSource, tables, meters);
  }

  /** The wake channel of a queue in {@code schema}. */
  static String wakeChannel(String schema) {
    return org.messagepump.core.spi.WakeSignal.channel("commands", schema);
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
   * messagepump_commands_<schema>} ({@link org.messagepump.core.spi.WakeSignal#channel}).
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
   * The operator face of this queue's schema: migrations, grants, depth, paused types, leased
   * commands, dead letters, pending commands, schedules and history. Its dead-letter meters are
   * this queue's, and the commands its schedules enqueue count in this queue's meters and run its
   * enqueue listeners.
   */
  public CommandOperations operations() {
    return operations;
  }

  /**
   * Stores {@code schedule}, encoding its command with this queue's codec: creates it, or updates
   * the stored one of that name (docs/commands.md, "Schedules"). Every process may define its
   * schedules at start-up: a definition that changes nothing writes nothing; one that changes the
   * command, options or misfire policy keeps the next tick; one that changes when it ticks
   * (expression, zone or interval) computes the next tick afresh from now. A paused schedule stays
   * paused. The command's class must be registered with the codec, its payload and headers within
   * the queue's limits, else {@link IllegalArgumentException}. Returns true when the schedule was
   * created. {@link CommandOperations#schedules()} lists, pauses, resumes, triggers and removes
   * schedules.
   */
  public boolean defineSchedule(Schedule schedule) {
    return operations.schedules().define(schedule);
  }

  /**
   * A driver pumping this queue's commands of the handlers' types in transactional mode, as {@link
   * #driver(CommandHandlers, CommandDriverOptions)} with {@link CommandDriverOptions#defaults()}.
   */
  public CommandDriver driver(CommandHandlers handlers) {
    return driver(handlers, CommandDriverOptions.defaults());
  }

  /**
   * A driver pumping this queue's commands of the handlers' types, run as {@code options} say (for
   * example lease mode, docs/leases.md). Every typed handler's class must be registered with this
   * queue's codec, and no type name may be handled twice, else {@link IllegalArgumentException};
   * null handlers or options too.
   */
  public CommandDriver driver(CommandHandlers handlers, CommandDriverOptions options) {
    return CommandDriver.create(this, handlers, options);
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

  /**
   * Whether this queue's drivers record handled commands in the history ({@link
   * CommandOperations#history} reads it).
   */
  public boolean keepsHistory() {
    return history;
  }

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
     * The schema of the queue's tables, migrated with {@link CommandOperations#migrate()} of {@link
     * CommandOperations#of(DataSource, String)}; default {@value CommandQueue#DEFAULT_SCHEMA}.
     * Queues in different schemas of one database never see each other's commands or dead letters,
     * and signal different wake channels. Must match {@code [a-z_][a-z0-9_]{0,40}}.
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
