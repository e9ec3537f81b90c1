package org.messagepump.eventstream;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.DeliveryStream;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.MessageCodec;
import org.messagepump.core.spi.Outcome;
import org.messagepump.core.spi.Tx;
import org.messagepump.eventstream.internal.CheckpointQueries;
import org.messagepump.eventstream.internal.CheckpointQueries.Claim;
import org.messagepump.eventstream.internal.HandlerLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Driver} of one event handler: acquires the next event of the handler's types from the
 * stream it is most behind on, hands it to the registered handler, and advances (or, on the
 * optimistic path, sets) the handler's checkpoint of that stream in the same transaction.
 *
 * <pre>{@code
 * EventDriver driver = EventDriver.builder(store)
 *     .handlerKey("orders-projection")
 *     .on(OrderPlaced.class, (ctx, e) -> insertOrder(ctx.tx(), e))
 *     .concurrency(Concurrency.MAXIMAL)
 *     .build();
 * MessagePump.builder(dataSource).name("orders-projection").driver(driver).build().start();
 * }</pre>
 */
public final class EventDriver implements Driver {

  /** Default concurrency: streams in parallel. */
  public static final Concurrency DEFAULT_CONCURRENCY = Concurrency.MAXIMAL;

  /** Default time acquisition waits for the handler lock under {@link Concurrency#MINIMAL}. */
  public static final Duration DEFAULT_HANDLER_LOCK_WAIT = Duration.ofSeconds(1);

  /** Default number of streams one acquisition may look at before it gives up for this poll. */
  public static final int DEFAULT_STREAMS_PER_POLL = 64;

  /** Longest handler key. */
  public static final int MAX_HANDLER_KEY_LENGTH = 200;

  private static final Pattern HANDLER_KEY = Pattern.compile("[A-Za-z0-9_.:/-]+");
  private static final int UNTRACKED_CANDIDATES = 8;
  private static final Logger log = LoggerFactory.getLogger(EventDriver.class);

  /** What acquire hands to handle, postpone and park. */
  private record State(Claim claim, StoredEvent event) {}

  /** A registered handler, either kind, answering the projection's next offset. */
  private interface Invocation {
    long invoke(EventContext context, Object event) throws Exception;
  }

  private final String handlerKey;
  private final MessageCodec codec;
  private final Map<String, Invocation> handlers;
  private final Concurrency concurrency;
  private final Duration handlerLockWait;
  private final int streamsPerPoll;
  private final CheckpointQueries queries;
  private final HandlerLock handlerLock;
  private final Counter conflicts;
  private final Counter parked;

  private EventDriver(Builder b) {
    this.handlerKey = b.handlerKey;
    this.codec = b.store.codec();
    this.handlers = Map.copyOf(b.handlers);
    this.concurrency = b.concurrency;
    this.handlerLockWait = b.handlerLockWait;
    this.streamsPerPoll = b.streamsPerPoll;
    this.queries = new CheckpointQueries(handlerKey, b.handlers.keySet());
    this.handlerLock = new HandlerLock(handlerKey);
    this.conflicts = counter(b.meterRegistry, "messagepump.eventstream.checkpoint.conflicts");
    this.parked = counter(b.meterRegistry, "messagepump.eventstream.parked");
  }

  private Counter counter(MeterRegistry registry, String name) {
    return registry == null
        ? null
        : Counter.builder(name).tag("handler", handlerKey).register(registry);
  }

  /** A builder for the driver of one handler reading from {@code store}. */
  public static Builder builder(EventStore store) {
    return new Builder(Objects.requireNonNull(store, "store"));
  }

  @Override
  public String name() {
    return "eventstream";
  }

  /** The handler key (the stable name checkpoints are kept under). */
  public String handlerKey() {
    return handlerKey;
  }

  /** The type names this handler reads. */
  public Set<String> types() {
    return handlers.keySet();
  }

  /** The handler's concurrency preference. */
  public Concurrency concurrency() {
    return concurrency;
  }

  /**
   * Claims up to {@code max} streams (at most one delivery per stream, so order within a stream is
   * kept): first a stream the handler does not track yet, else the due tracked stream with the
   * largest backlog, locked {@code SKIP LOCKED}. A claimed stream with no event of the handler's
   * types has its checkpoint advanced to its committed end, and the next stream is tried.
   */
  @Override
  public List<Delivery> acquire(Tx tx, int max) throws SQLException {
    if (concurrency == Concurrency.MINIMAL && !handlerLock.lock(tx, handlerLockWait)) {
      return List.of();
    }
    var dsl = tx.dsl();
    Set<Long> claimed = new LinkedHashSet<>();
    List<Delivery> deliveries = new ArrayList<>();
    boolean untrackedLeft = true;
    while (deliveries.size() < max && claimed.size() < streamsPerPoll) {
      Claim claim = null;
      if (untrackedLeft) {
        claim = queries.trackUntracked(dsl, claimed, UNTRACKED_CANDIDATES);
        untrackedLeft = claim != null;
      }
      if (claim == null) {
        claim = queries.lockTracked(dsl, claimed);
      }
      if (claim == null) {
        break;
      }
      claimed.add(claim.streamId());
      StoredEvent event = queries.firstEvent(dsl, claim);
      if (event != null) {
        deliveries.add(delivery(claim, event));
      } else if (claim.nextOffset() > claim.checkpoint()) {
        // Nothing for this handler below the committed end: do not claim the stream again until
        // it grows. Uncommitted events lie at or above nextOffset, so none is skipped.
        queries.setOffset(dsl, claim.streamId(), claim.checkpoint(), claim.nextOffset());
      }
    }
    return deliveries;
  }

  private static Delivery delivery(Claim claim, StoredEvent event) {
    return new Delivery(
        event.envelope(),
        claim.failures(),
        new DeliveryStream(Long.toString(claim.streamId()), event.offset(), claim.checkpoint()),
        new State(claim, event));
  }

  /**
   * Decodes the event, runs its handler and advances the checkpoint to offset + 1; a projection
   * answering another offset sets the checkpoint there. An undecodable payload or a throwing
   * handler fails the delivery.
   */
  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    State state = state(delivery);
    if (concurrency == Concurrency.MINIMAL && !handlerLock.tryLock(tx)) {
      return Outcome.busy("handler '" + handlerKey + "' is handling another event");
    }
    Invocation handler = handlers.get(delivery.messageType());
    if (handler == null) {
      return Outcome.failed(
          new IllegalStateException(
              "handler '" + handlerKey + "' has no handler for type " + delivery.messageType()));
    }
    Object event = codec.decode(delivery.messageType(), delivery.envelope().payload());
    Claim claim = state.claim();
    EventContext context =
        new EventContext(tx, handlerKey, state.event(), claim.checkpoint(), delivery.attempt());
    long next = handler.invoke(context, event);
    long expected = state.event().offset() + 1;
    if (next != expected) {
      if (next < 0) {
        return Outcome.failed(
            new IllegalStateException("projection returned a negative offset: " + next));
      }
      if (conflicts != null) {
        conflicts.increment();
      }
      log.warn(
          "{}: optimistic concurrency conflict on stream {}: expected checkpoint {}, handler holds"
              + " {}; setting the checkpoint to {}",
          handlerKey,
          claim.streamId(),
          expected,
          next,
          next);
    }
    queries.setOffset(tx.dsl(), claim.streamId(), claim.checkpoint(), next);
    return Outcome.HANDLED;
  }

  /** Postpones the delivery's stream for this handler only; the event is not skipped. */
  @Override
  public void postpone(Tx tx, Delivery delivery, int failures, Duration delay) {
    Claim claim = state(delivery).claim();
    queries.postpone(tx.dsl(), claim.streamId(), claim.checkpoint(), failures, delay);
  }

  /** Parks the delivery's stream for this handler only (see {@link EventHandlers#resume}). */
  @Override
  public void park(Tx tx, Delivery delivery, int failures, String reason) {
    Claim claim = state(delivery).claim();
    queries.park(tx.dsl(), claim.streamId(), claim.checkpoint(), failures, reason);
    if (parked != null) {
      parked.increment();
    }
  }

  private State state(Delivery delivery) {
    if (!(delivery.driverState() instanceof State s)) {
      throw new IllegalArgumentException("delivery was not acquired by this driver: " + delivery);
    }
    return s;
  }

  /**
   * Builds an {@link EventDriver}. Setters reject bad values with an {@link
   * IllegalArgumentException} naming the option; {@link #build()} rejects a missing handler key or
   * handler with an {@link IllegalStateException}.
   */
  public static final class Builder {
    private final EventStore store;
    private final Map<String, Invocation> handlers = new LinkedHashMap<>();
    private String handlerKey;
    private Concurrency concurrency = DEFAULT_CONCURRENCY;
    private Duration handlerLockWait = DEFAULT_HANDLER_LOCK_WAIT;
    private int streamsPerPoll = DEFAULT_STREAMS_PER_POLL;
    private MeterRegistry meterRegistry;

    private Builder(EventStore store) {
      this.store = store;
    }

    /** The handler's stable name (required): 1–200 letters, digits, {@code _ . : / -}. */
    public Builder handlerKey(String handlerKey) {
      if (handlerKey == null
          || handlerKey.length() > MAX_HANDLER_KEY_LENGTH
          || !HANDLER_KEY.matcher(handlerKey).matches()) {
        throw new IllegalArgumentException(
            "handlerKey must be 1-200 letters, digits, '_', '.', ':', '/' or '-': " + handlerKey);
      }
      this.handlerKey = handlerKey;
      return this;
    }

    /** Handles events of {@code type}; the checkpoint advances after each. */
    public <E> Builder on(Class<E> type, EventHandler<? super E> handler) {
      Objects.requireNonNull(handler, "handler");
      register(
          type,
          (ctx, e) -> {
            handler.handle(ctx, type.cast(e));
            return ctx.nextOffset();
          });
      return this;
    }

    /** Handles events of {@code type} with a handler that reports its own checkpoint. */
    public <E> Builder project(Class<E> type, ProjectionHandler<? super E> handler) {
      Objects.requireNonNull(handler, "handler");
      register(type, (ctx, e) -> handler.handle(ctx, type.cast(e)));
      return this;
    }

    private void register(Class<?> type, Invocation invocation) {
      Objects.requireNonNull(type, "type");
      String name;
      try {
        name = store.codec().typeOf(type);
      } catch (UnknownMessageTypeException e) {
        throw new IllegalArgumentException(
            "event class " + type.getName() + " is not registered with the codec", e);
      }
      if (handlers.putIfAbsent(name, invocation) != null) {
        throw new IllegalArgumentException("a handler for " + type.getName() + " is already set");
      }
    }

    /** Minimal (one delivery at a time, cluster-wide) or maximal (default). */
    public Builder concurrency(Concurrency concurrency) {
      this.concurrency = Objects.requireNonNull(concurrency, "concurrency");
      return this;
    }

    /** How long acquisition waits for the handler lock under minimal concurrency; positive. */
    public Builder handlerLockWait(Duration handlerLockWait) {
      if (handlerLockWait == null || handlerLockWait.isNegative() || handlerLockWait.isZero()) {
        throw new IllegalArgumentException("handlerLockWait must be positive: " + handlerLockWait);
      }
      this.handlerLockWait = handlerLockWait;
      return this;
    }

    /** Streams one acquisition may look at (and advance) before giving up; at least 1. */
    public Builder streamsPerPoll(int streamsPerPoll) {
      if (streamsPerPoll < 1) {
        throw new IllegalArgumentException("streamsPerPoll must be >= 1: " + streamsPerPoll);
      }
      this.streamsPerPoll = streamsPerPoll;
      return this;
    }

    /** Where to register the driver's {@code messagepump.eventstream.*} meters; none by default. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meterRegistry = Objects.requireNonNull(meterRegistry, "meterRegistry");
      return this;
    }

    /** The driver. */
    public EventDriver build() {
      if (handlerKey == null) {
        throw new IllegalStateException("handlerKey is required");
      }
      if (handlers.isEmpty()) {
        throw new IllegalStateException("at least one handler (on or project) is required");
      }
      return new EventDriver(this);
    }
  }
}
