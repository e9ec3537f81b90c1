package org.messagepump.commands;

import java.sql.SQLException;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.messagepump.commands.internal.CommandQueries;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.DeliveryStatements;
import org.messagepump.commands.internal.LeaseQueries;
import org.messagepump.commands.internal.RetentionQueries;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.Tx;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.AcquisitionGate;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Outcome;

/**
 * The {@link Driver} of the command queue: acquires due commands of the types its handlers cover
 * (oldest first within a type, the types taking turns to be served first) ({@code FOR UPDATE SKIP
 * LOCKED}, so pumps with different or overlapping types share one table safely), runs the handler
 * in the delivery's transaction and deletes the command on success, postpones it with the database
 * clock, and parks it into the dead letters past {@code maxFailures}.
 *
 * <pre>{@code
 * MessagePump pump = MessagePump.builder(dataSource)
 *     .name("orders")
 *     .driver(queue.driver(handlers))
 *     .maxFailures(5)
 *     .build();
 * }</pre>
 */
public final class CommandDriver implements Driver {

  private static final org.slf4j.Logger log =
      org.slf4j.LoggerFactory.getLogger(CommandDriver.class);

  /** The driver's name in logs and metric tags. */
  public static final String NAME = "commands";

  private record Route(Class<?> commandClass, CommandHandler<Object> handler) {}

  private final CommandQueue queue;
  private final MessageCodec codec;
  private final Map<String, Route> routes;
  private final List<String> types;
  private final Meters.Counter parked;
  private final AtomicInteger turn = new AtomicInteger();
  private final CommandQueries.ClaimStatement claim;
  private final CommandTables tables;
  private final Duration lease; // null: transactional mode
  private final LeaseQueries.Statements leaseStatements; // null: transactional mode
  private final DeliveryStatements statements;
  private final String holder;
  private final Meters.Counter expired;
  private final boolean history;

  /**
   * With a history: how long each delivery's handler ran, in nanoseconds, from {@link #handle} to
   * the batch's {@link #completed}; an outcome that is not a success drops its entry.
   */
  private final Map<Delivery, Long> handlingNanos = new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Entries left behind by batches that rolled back (their deliveries come back as new ones) are
   * dropped past this many.
   */
  private static final int MAX_TIMED = 10_000;

  private CommandDriver(CommandQueue queue, Map<String, Route> routes, Duration lease) {
    this.queue = queue;
    this.lease = lease;
    this.holder = lease == null ? null : holderName();
    this.codec = queue.codec();
    this.routes = Collections.unmodifiableMap(routes);
    this.types = List.copyOf(routes.keySet());
    this.tables = queue.tables();
    this.history = queue.keepsHistory();
    this.claim = types.isEmpty() ? null : new CommandQueries.ClaimStatement(tables, types);
    this.leaseStatements =
        lease == null
            ? null
            : tables.statements(LeaseQueries.Statements.class, LeaseQueries.Statements::new);
    this.statements = tables.statements(DeliveryStatements.class, DeliveryStatements::new);
    this.parked =
        queue.meters().counter("messagepump.commands.parked", "Commands moved to the dead letters");
    this.expired =
        lease == null
            ? null
            : queue
                .meters()
                .counter(
                    "messagepump.commands.leases.expired",
                    "Commands claimed again after their lease expired, the attempt counted as a"
                        + " failure");
  }

  /** This process as a lease holder: {@code pid@host} as the JVM names it, cut to a key's size. */
  private static String holderName() {
    String name = java.lang.management.ManagementFactory.getRuntimeMXBean().getName();
    return name.length() > 200 ? name.substring(0, 200) : name;
  }

  /**
   * A driver for {@code queue} with {@code handlers}, run as {@code options} say (made by {@link
   * CommandQueue#driver(CommandHandlers, CommandDriverOptions)}). Every typed handler's class must
   * be registered with the queue's codec, and no type name may be handled twice (a typed and a raw
   * handler of one name), else {@link IllegalArgumentException}.
   */
  static CommandDriver create(
      CommandQueue queue, CommandHandlers handlers, CommandDriverOptions options) {
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    return new CommandDriver(queue, routes(queue, handlers), options.lease().orElse(null));
  }

  private static Map<String, Route> routes(CommandQueue queue, CommandHandlers handlers) {
    if (queue == null) {
      throw new IllegalArgumentException("queue must not be null");
    }
    if (handlers == null) {
      throw new IllegalArgumentException("handlers must not be null");
    }
    Map<String, Route> routes = new LinkedHashMap<>();
    for (CommandHandlers.Registration r : handlers.registrations()) {
      String type;
      if (r.commandClass() != null) {
        try {
          type = queue.codec().typeOf(r.commandClass());
        } catch (UnknownMessageTypeException e) {
          throw new IllegalArgumentException(
              "handler for "
                  + r.commandClass().getName()
                  + ": the class is not registered with the queue's codec",
              e);
        }
      } else {
        type = r.rawType();
      }
      // A type name PostgreSQL cannot store or index would fail every poll: refuse it here.
      Inputs.key("type of handler " + describe(r), type);
      if (routes.containsKey(type)) {
        throw new IllegalArgumentException("type '" + type + "' has two handlers");
      }
      routes.put(type, new Route(r.commandClass(), r.handler()));
    }
    queue.gauges().track(routes.keySet());
    return routes;
  }

  private static String describe(CommandHandlers.Registration r) {
    return r.commandClass() != null ? r.commandClass().getName() : "(raw)";
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Pumps listen on the queue's {@link CommandQueue#wakeChannel()}, which enqueues signal. */
  @Override
  public java.util.Optional<String> wakeChannel() {
    return java.util.Optional.of(queue.wakeChannel());
  }

  /** The type names this driver acquires, in registration order. */
  public Set<String> types() {
    return routes.keySet();
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max) throws SQLException {
    return acquire(tx, max, AcquisitionGate.ALL);
  }

  /**
   * The lease of lease mode ({@link CommandDriverOptions#withLease}); empty in transactional mode.
   */
  @Override
  public java.util.Optional<Duration> lease() {
    return java.util.Optional.ofNullable(lease);
  }

  @Override
  public List<Delivery> extendLeases(Tx tx, List<Delivery> running) throws SQLException {
    if (lease == null) {
      return Driver.super.extendLeases(tx, running);
    }
    return LeaseQueries.extend(tx.connection(), leaseStatements, running, lease);
  }

  private List<Delivery> claimLeased(Tx tx, int max, AcquisitionGate gate) throws SQLException {
    String[] order = claim.order(nextTurn(), gate);
    if (order.length == 0) {
      return List.of();
    }
    List<LeaseQueries.Claim> claims =
        LeaseQueries.claim(tx.connection(), leaseStatements, List.of(order), max, holder, lease);
    List<Delivery> out = new java.util.ArrayList<>(claims.size());
    for (LeaseQueries.Claim c : claims) {
      if (c.expiredHolder() != null) {
        expired.increment();
        log.warn(
            "command {} ({}): the lease of attempt {} held by {} expired before it completed;"
                + " counted as a failure",
            c.delivery().messageId(),
            c.delivery().messageType(),
            c.delivery().failures(),
            Inputs.reason(c.expiredHolder()));
      }
      out.add(c.delivery());
    }
    return out;
  }

  /**
   * Acquires only commands of the types {@code gate} admits (a circuit breaker's or bulkhead's
   * gate); when it admits none, no statement is sent. Types paused cluster-wide ({@link
   * CommandOperations#pauseType}) are skipped by the claim statement itself.
   */
  @Override
  public List<Delivery> acquire(Tx tx, int max, AcquisitionGate gate) throws SQLException {
    if (max < 1 || claim == null) {
      return List.of();
    }
    if (lease != null) {
      return claimLeased(tx, max, gate);
    }
    return claim.run(tx.connection(), nextTurn(), max, gate);
  }

  /**
   * Where the next scan of the types starts: one further at each call, so each type gets its turn
   * first.
   */
  private int nextTurn() {
    return types.size() == 1 ? 0 : Math.floorMod(turn.getAndIncrement(), types.size());
  }

  /**
   * Decodes the command (an unknown type or an undecodable payload throws: a counted failure), runs
   * its handler. Acquire already deleted the command in this transaction.
   */
  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    if (delivery.driverState() instanceof CommandQueries.Claimed c && c.problem() != null) {
      throw new UndecodableMessageException(
          "command " + delivery.messageId() + " cannot be read: " + c.problem(), null);
    }
    String type = delivery.messageType();
    Route route = routes.get(type);
    if (route == null) {
      throw new UnknownMessageTypeException("no handler for command type '" + type + "'");
    }
    Object command = decode(route, type, delivery.envelope().payload());
    long began = history ? System.nanoTime() : 0;
    route
        .handler()
        .handle(
            command,
            new CommandContext(
                queue, tx, delivery.envelope(), delivery.attempt(), leaseToken(delivery)));
    if (history) {
      if (handlingNanos.size() >= MAX_TIMED) {
        handlingNanos.clear();
      }
      handlingNanos.put(delivery, System.nanoTime() - began);
    }
    // Transactional mode: acquire already deleted the command in this transaction. Lease mode:
    // completed() deletes it, fenced, after the handler.
    return Outcome.HANDLED;
  }

  private Long leaseToken(Delivery d) {
    return lease != null && d.driverState() instanceof CommandQueries.Claimed c
        ? c.leaseToken()
        : null;
  }

  /**
   * Lease mode: deletes each completed command, if its lease is still this claim's (transactional
   * mode deleted it at the claim). Then, in the same transaction, releases the keys that lived
   * while their command was pending and, when the queue keeps a history, records the handled
   * commands: one statement each, and none when no delivery needs it.
   */
  @Override
  public void completed(Tx tx, List<Delivery> handled) throws SQLException {
    if (lease != null) {
      for (Delivery d : handled) {
        LeaseQueries.complete(tx.connection(), leaseStatements, id(d), leaseToken(d));
      }
    }
    releaseKeys(tx, handled);
    if (history) {
      List<RetentionQueries.HistoryRow> rows = new java.util.ArrayList<>(handled.size());
      for (Delivery d : handled) {
        Long nanos = handlingNanos.remove(d);
        rows.add(
            new RetentionQueries.HistoryRow(
                id(d),
                d.messageType(),
                d.driverState() instanceof CommandQueries.Claimed c ? c.idempotencyKey() : null,
                d.attempt(),
                nanos == null ? 0 : nanos / 1000));
      }
      statements.record(tx.connection(), rows);
    }
  }

  /** Releases the keys of {@code done} that live while their command is pending, if any. */
  private void releaseKeys(Tx tx, List<Delivery> done) throws SQLException {
    List<UUID> ids = null;
    List<String> keys = null;
    for (Delivery d : done) {
      if (d.driverState() instanceof CommandQueries.Claimed c
          && c.releaseKey()
          && c.idempotencyKey() != null) {
        if (ids == null) {
          ids = new java.util.ArrayList<>();
          keys = new java.util.ArrayList<>();
        }
        ids.add(c.id());
        keys.add(c.idempotencyKey());
      }
    }
    if (ids != null) {
      statements.releaseKeys(tx.connection(), ids, keys);
    }
  }

  private Object decode(Route route, String type, byte[] payload) {
    if (route.commandClass() == null) {
      return payload;
    }
    Object command = codec.decode(type, payload);
    if (!route.commandClass().isInstance(command)) {
      throw new UndecodableMessageException(
          "command type '"
              + type
              + "' decoded as "
              + (command == null ? "null" : command.getClass().getName())
              + ", but its handler takes "
              + route.commandClass().getName(),
          null);
    }
    return command;
  }

  /**
   * Claims the command again after its batch rolled back, so the pump can count its failure: the
   * rollback put the row back as it was, so it is claimed (deleted and returned) as {@link
   * #acquire} would, unless another worker holds it.
   */
  @Override
  public java.util.Optional<Delivery> reacquire(Tx tx, Delivery delivery) throws SQLException {
    if (lease != null) {
      return java.util.Optional.empty(); // lease mode: each outcome has a transaction of its own
    }
    return CommandQueries.ClaimStatement.reclaim(tx.connection(), tables, id(delivery));
  }

  @Override
  public void postpone(Tx tx, Delivery delivery, int failures, Duration delay) throws SQLException {
    if (history) {
      handlingNanos.remove(delivery);
    }
    if (lease != null) {
      LeaseQueries.postpone(
          tx.connection(), leaseStatements, id(delivery), leaseToken(delivery), failures, delay);
      return;
    }
    statements.reinsert(tx.connection(), delivery, id(delivery), failures, delay);
  }

  @Override
  public void park(Tx tx, Delivery delivery, int failures, String reason) throws SQLException {
    if (lease != null) {
      LeaseQueries.takeForParking(
          tx.connection(), leaseStatements, id(delivery), leaseToken(delivery));
    }
    statements.park(tx.connection(), delivery, id(delivery), failures, reason);
    releaseKeys(tx, List.of(delivery));
    if (history) {
      handlingNanos.remove(delivery);
    }
    parked.increment();
  }

  private static UUID id(Delivery d) {
    return d.driverState() instanceof CommandQueries.Claimed c
        ? c.id()
        : UUID.fromString(d.messageId());
  }
}
