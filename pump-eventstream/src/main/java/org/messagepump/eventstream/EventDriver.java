package org.messagepump.eventstream;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.Tx;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Outcome;
import org.messagepump.eventstream.internal.CheckpointQueries;
import org.messagepump.eventstream.internal.CheckpointQueries.LockedCheckpoint;
import org.messagepump.eventstream.internal.EventRows;
import org.messagepump.eventstream.internal.HandlerLock;
import org.messagepump.eventstream.internal.HandlerRegistry;
import org.messagepump.eventstream.internal.PendingClaim;
import org.messagepump.eventstream.internal.StreamRun;
import org.messagepump.eventstream.internal.StreamRun.Step;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Driver} of one event handler, made by {@link EventStore#driver(String, EventHandlers,
 * EventDriverOptions)}: acquires the next event of the handler's types from its pending streams in
 * round-robin order, hands it to the registered handler, and advances (or, on the optimistic path,
 * sets) the handler's checkpoint of that stream in the same transaction.
 *
 * <pre>{@code
 * EventDriver driver = store.driver("orders-projection",
 *     EventHandlers.builder()
 *         .on(OrderPlaced.class, (e, ctx) -> insertOrder(ctx.tx(), e))
 *         .build(),
 *     EventDriverOptions.defaults().withConcurrency(Concurrency.MAXIMAL));
 * MessagePump.builder(dataSource).name("orders-projection").driver(driver).build().start();
 * }</pre>
 */
public final class EventDriver implements Driver {

  /** Longest handler key. */
  public static final int MAX_HANDLER_KEY_LENGTH = 200;

  private static final Pattern HANDLER_KEY = Pattern.compile("[A-Za-z0-9_.:/-]+");

  /**
   * Every this many acquisitions of one driver (and whenever an acquisition finds nothing pending)
   * the driver refreshes its rows from the streams changed since its last refresh. It bounds how
   * long a busy handler takes to notice a stream that just got events: see docs/eventstream.md,
   * "Fair service".
   */
  public static final int REFRESH_EVERY = 16;

  private static final Logger log = LoggerFactory.getLogger(EventDriver.class);

  /** The handler of one type name: decoded by the codec ({@code typed}) or given the bytes. */
  private record Route(boolean typed, EventHandlers.Invocation invocation) {}

  private final EventStore store;
  private final String handlerKey;
  private final String wakeChannel;
  private final MessageCodec codec;
  private final Map<String, Route> handlers;
  private final Concurrency concurrency;
  private final Duration handlerLockWait;
  private final int streamsPerPoll;
  private final Duration heldStreamWait;
  private final CheckpointQueries queries;
  private final HandlerRegistry registry;
  private final PendingClaim pending;
  private final StartPosition startPosition;
  private final AtomicBoolean refreshDue = new AtomicBoolean(true);
  private final AtomicLong acquisitions = new AtomicLong();

  private final HandlerLock handlerLock;
  private final Meters.Counter conflicts;
  private final Meters.Counter parked;

  EventDriver(
      EventStore store, String handlerKey, EventHandlers handlers, EventDriverOptions options) {
    if (handlers == null) {
      throw new IllegalArgumentException("handlers must not be null");
    }
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    this.store = store;
    this.handlerKey = checkedKey(handlerKey);
    this.wakeChannel = store.wakeChannel();
    this.codec = store.codec();
    this.handlers = routes(store.codec(), handlers);
    this.concurrency = options.concurrency();
    this.handlerLockWait = options.handlerLockWait();
    this.streamsPerPoll = options.streamsPerPoll();
    this.heldStreamWait = options.heldStreamWait();
    this.queries = new CheckpointQueries(store.tables(), handlerKey, this.handlers.keySet());
    this.handlerLock = new HandlerLock(store.schema(), handlerKey);
    this.registry = new HandlerRegistry(store.tables(), handlerKey);
    this.pending = new PendingClaim(store.tables(), handlerKey, this.handlers.keySet());
    this.startPosition = options.startAt();
    Meters meters = store.meters() != null ? store.meters() : Meters.none();
    this.conflicts =
        meters.counter("messagepump.eventstream.checkpoint.conflicts", null, "handler", handlerKey);
    this.parked = meters.counter("messagepump.eventstream.parked", null, "handler", handlerKey);
    if (store.meters() != null) {
      store.operations().gauges().track(handlerKey, store.meters());
    }
  }

  private static String checkedKey(String handlerKey) {
    if (handlerKey == null
        || handlerKey.length() > MAX_HANDLER_KEY_LENGTH
        || !HANDLER_KEY.matcher(handlerKey).matches()) {
      throw new IllegalArgumentException(
          "handlerKey must be 1-200 letters, digits, '_', '.', ':', '/' or '-': " + handlerKey);
    }
    return handlerKey;
  }

  /** The handlers by type name: a typed handler's class must be known to the codec. */
  private static Map<String, Route> routes(MessageCodec codec, EventHandlers handlers) {
    Map<String, Route> routes = new LinkedHashMap<>();
    for (EventHandlers.Registration r : handlers.registrations()) {
      String name;
      if (r.eventClass() != null) {
        try {
          name = codec.typeOf(r.eventClass());
        } catch (UnknownMessageTypeException e) {
          throw new IllegalArgumentException(
              "event class " + r.eventClass().getName() + " is not registered with the codec", e);
        }
        // A type name no event can be stored under (NUL, over the key limit) would fail every poll.
        Inputs.key("type name of " + r.eventClass().getName(), name);
      } else {
        name = r.rawType();
      }
      if (routes.putIfAbsent(name, new Route(r.eventClass() != null, r.invocation())) != null) {
        throw new IllegalArgumentException("type '" + name + "' has two handlers");
      }
    }
    return java.util.Collections.unmodifiableMap(routes);
  }

  @Override
  public String name() {
    return "eventstream";
  }

  /**
   * Event pumps listen on the channel every append to their store's schema signals, so new events
   * wake them at once.
   */
  @Override
  public java.util.Optional<String> wakeChannel() {
    return java.util.Optional.of(wakeChannel);
  }

  /** The handler key (the stable name checkpoints are kept under). */
  public String handlerKey() {
    return handlerKey;
  }

  /** The type names this handler reads, in registration order. */
  public Set<String> types() {
    return handlers.keySet();
  }

  /** The handler's concurrency preference. */
  public Concurrency concurrency() {
    return concurrency;
  }

  /** Where this handler starts when its key has never run. */
  public StartPosition startPosition() {
    return startPosition;
  }

  /**
   * Claims streams until it holds up to {@code max} events: the handler's pending streams (those
   * with events past its checkpoint, as its rows know) in round-robin order, each locked {@code
   * SKIP LOCKED}; from each, the next events of the handler's types in offset order (handled in
   * that order, a failed one stops the rest of its stream). A claimed stream with no event of the
   * handler's types has its checkpoint advanced to its known end, and the next stream is tried.
   * Every {@value #REFRESH_EVERY} acquisitions, and when nothing is pending, the rows are first
   * refreshed from the streams changed since the last refresh (the first one registers the
   * handler).
   */
  @Override
  public List<Delivery> acquire(Tx tx, int max) throws SQLException {
    if (concurrency == Concurrency.MINIMAL && !handlerLock.lock(tx, handlerLockWait)) {
      return List.of();
    }
    if (acquisitions.incrementAndGet() % REFRESH_EVERY == 0) {
      refreshDue.set(true);
    }
    boolean refreshed = false;
    // One worker of this driver at a time tries a due refresh: while its transaction holds the
    // handler row, the others' attempts would only be skipped (a round trip each).
    if (refreshDue.compareAndSet(true, false)) {
      try {
        refreshed = refresh(tx) != HandlerRegistry.Refresh.SKIPPED;
      } finally {
        if (!refreshed) {
          refreshDue.set(true); // another transaction held it, or it failed: still due
        }
      }
    }
    // The streams this transaction holds: claimed, or given back (excluded from the next claims,
    // not counted against streamsPerPoll).
    Set<Long> claimed = new LinkedHashSet<>();
    int givenBack = 0;
    List<Delivery> deliveries = new ArrayList<>();
    while (deliveries.size() < max && claimed.size() - givenBack < streamsPerPoll) {
      int limit = max - deliveries.size();
      PendingClaim.Claimed claim = pending.run(tx.connection(), claimed, limit);
      if (claim.checkpoint() == null && !refreshed) {
        refreshed = true;
        if (refresh(tx) == HandlerRegistry.Refresh.CHANGED) {
          claim = pending.run(tx.connection(), claimed, limit);
        }
      }
      if (claim.checkpoint() == null) {
        break;
      }
      claimed.add(claim.checkpoint().streamId());
      if (claim.overtaken()) {
        // Served a moment ago (another worker claimed it after this claim read the cursor): left
        // as it was for its next turn, and the walk goes on from the cursor.
        giveBack(tx, claim);
        givenBack++;
        continue;
      }
      take(tx, claim.checkpoint(), claim.events(), claim.stored(), deliveries);
    }
    if (deliveries.isEmpty()
        && !heldStreamWait.isZero()
        && claimed.isEmpty()
        && pending.anyPending(tx.connection(), claimed)) {
      // Every pending stream is held, most likely by a delivery of this handler about to commit:
      // wait briefly for one rather than make the pump sleep a whole poll interval. (An idle
      // handler, with nothing pending at all, does not get here.) Not when this transaction
      // claimed a row (given back, or a stream without the handler's types), and never while an
      // operation (reset) holds the handler: holding a row while waiting for another closes a
      // cycle with an operation that waits for both, and a claim that found nothing may still
      // hold one (waitForPending).
      LockedCheckpoint claim =
          HandlerLock.waiting(
              tx, heldStreamWait, () -> queries.waitForPending(tx.connection(), claimed));
      if (claim != null) {
        take(
            tx,
            claim,
            queries.nextEvents(tx.connection(), claim, max),
            claim.checkpoint(),
            deliveries);
      }
    }
    return deliveries;
  }

  /** Undoes an overtaken claim's bookkeeping, when its statement moved the checkpoint. */
  private void giveBack(Tx tx, PendingClaim.Claimed claim) throws SQLException {
    LockedCheckpoint row = claim.checkpoint();
    if (claim.stored() != row.checkpoint()) {
      queries.giveBack(
          tx.connection(), row.streamId(), claim.stored(), row.checkpoint(), row.failures());
    }
  }

  /** Refreshes the handler's rows unless another transaction is doing it. */
  private HandlerRegistry.Refresh refresh(Tx tx) throws SQLException {
    HandlerRegistry.Refresh done = registry.refresh(tx, startPosition.name());
    if (done != HandlerRegistry.Refresh.SKIPPED) {
      refreshDue.set(false);
    }
    return done;
  }

  /**
   * Turns a claim into deliveries, or advances an irrelevant stream's checkpoint to its end; {@code
   * stored} is the checkpoint the row holds now (the claim statement moves it past the events it
   * read, see {@link PendingClaim}).
   */
  private void take(
      Tx tx,
      LockedCheckpoint claim,
      List<EventRows.Row> events,
      long stored,
      List<Delivery> deliveries)
      throws SQLException {
    if (events.isEmpty()) {
      if (claim.nextOffset() > claim.checkpoint()) {
        // Nothing for this handler below the known end: do not claim the stream again until it
        // grows. Every event below the known end is committed, so none is skipped.
        queries.setOffset(
            tx.connection(), claim.streamId(), claim.checkpoint(), claim.nextOffset());
      }
      return;
    }
    StreamRun run = new StreamRun(claim, stored);
    long expected = claim.checkpoint();
    String streamId = Long.toString(claim.streamId());
    Step previous = null;
    for (EventRows.Row event : events) {
      Step step = new Step(run, event, expected, previous);
      deliveries.add(
          new Delivery(
              event.envelope(),
              expected == claim.checkpoint() ? claim.failures() : 0,
              logKeys(streamId, event.offset(), expected),
              step));
      previous = step;
      expected = event.offset() + 1;
    }
  }

  /**
   * Decodes the event (a raw handler gets the payload bytes) and runs its handler, remembering the
   * next offset it answered; the checkpoint is moved once the outcome is final, in {@link
   * #completed}. An undecodable payload, unreadable stored headers (an {@link
   * UndecodableMessageException} naming the event, not its data) or a throwing handler fails the
   * delivery; an event whose predecessor in the same batch was not handled is Busy (it comes again
   * with the next acquisition of its stream).
   */
  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    Step step = step(delivery);
    if (!step.isNext()) {
      return Outcome.busy(
          "an earlier event of stream " + step.run().streamId() + " was not handled");
    }
    if (concurrency == Concurrency.MINIMAL && !handlerLock.tryLock(tx)) {
      return Outcome.busy("handler '" + handlerKey + "' is handling another event");
    }
    if (step.event().problem() != null) {
      throw new UndecodableMessageException(step.event().problem(), null);
    }
    Route handler = handlers.get(delivery.messageType());
    if (handler == null) {
      return Outcome.failed(
          new IllegalStateException(
              "handler '" + handlerKey + "' has no handler for type " + delivery.messageType()));
    }
    byte[] payload = delivery.envelope().payload();
    Object event = handler.typed() ? codec.decode(delivery.messageType(), payload) : payload;
    EventContext context =
        new EventContext(
            store,
            tx,
            handlerKey,
            EventStore.storedEvent(step.event()),
            step.expectedCheckpoint(),
            delivery.attempt());
    long next = handler.invocation().invoke(event, context);
    if (next < 0) {
      return Outcome.failed(
          new IllegalStateException("projection returned a negative offset: " + next));
    }
    step.handled(next);
    return Outcome.HANDLED;
  }

  /**
   * The success bookkeeping, once the batch's outcomes are final: each handled event's run moves to
   * what its handler answered (a projection answering another offset than the next one is an
   * optimistic-concurrency conflict: counted, logged, and the checkpoint is set there), and each
   * run whose checkpoint is not where the claim statement put the row is written, one update per
   * stream for the whole batch. A run whose events were all handled has nothing to write.
   */
  @Override
  public void completed(Tx tx, List<Delivery> handled) throws SQLException {
    Set<StreamRun> runs = new LinkedHashSet<>();
    for (Delivery d : handled) {
      Step step = step(d);
      StreamRun run = step.run();
      long expected = step.event().offset() + 1;
      if (step.answered() != expected) {
        conflicts.increment();
        log.warn(
            "{}: optimistic concurrency conflict on stream {}: expected checkpoint {}, handler"
                + " holds {}; setting the checkpoint to {}",
            handlerKey,
            run.streamId(),
            expected,
            step.answered(),
            step.answered());
      }
      run.advance(step.answered());
      runs.add(run);
    }
    for (StreamRun run : runs) {
      if (run.unsaved()) {
        save(tx, run);
      }
    }
  }

  private void save(Tx tx, StreamRun run) throws SQLException {
    queries.setOffset(tx.connection(), run.streamId(), run.stored(), run.checkpoint());
    run.saved();
  }

  /**
   * Postpones the delivery's stream for this handler only; the event is not skipped. The run ends
   * at the event's checkpoint (a Handled outcome the pump turned into a failure included). A
   * delivery left over from an interrupted run is not recorded (its predecessor was).
   */
  @Override
  public void postpone(Tx tx, Delivery delivery, int failures, Duration delay) throws SQLException {
    Step step = step(delivery);
    if (step.isNext()) {
      StreamRun run = endAt(tx, step);
      queries.postpone(tx.connection(), run.streamId(), run.checkpoint(), failures, delay);
    }
  }

  /** Parks the delivery's stream for this handler only (see {@link EventOperations#resume}). */
  @Override
  public void park(Tx tx, Delivery delivery, int failures, String reason) throws SQLException {
    Step step = step(delivery);
    if (step.isNext()) {
      StreamRun run = endAt(tx, step);
      queries.park(tx.connection(), run.streamId(), run.checkpoint(), failures, reason);
      parked.increment();
    }
  }

  /** Ends the step's run at its checkpoint and writes it back where the claim moved the row. */
  private StreamRun endAt(Tx tx, Step step) throws SQLException {
    StreamRun run = step.run();
    run.end(step.expectedCheckpoint());
    if (run.unsaved()) {
      save(tx, run);
    }
    return run;
  }

  /**
   * Locks the delivery's checkpoint row again after its batch was rolled back ({@code FOR UPDATE
   * SKIP LOCKED}), so that the pump can count the failure of a delivery whose commit failed and
   * park the stream at {@code maxFailures}. Returns the same event with the row's current failure
   * count and a fresh run on which {@link #postpone} and {@link #park} work. A stream whose
   * tracking began in the rolled-back transaction is tracked again (its checkpoint row went with
   * the rollback). Empty when another transaction holds the row, or the checkpoint is parked or no
   * longer where this delivery expected it (an event of the run after the first, whose
   * predecessors' advance was rolled back too, or a stream another worker has moved on).
   */
  @Override
  public java.util.Optional<Delivery> reacquire(Tx tx, Delivery delivery) throws SQLException {
    Step stale = step(delivery);
    long streamId = stale.run().streamId();
    LockedCheckpoint claim = queries.relock(tx.connection(), streamId, stale.expectedCheckpoint());
    if (claim == null
        && stale.expectedCheckpoint() == 0
        && queries.untracked(tx.connection(), streamId)
        && refresh(tx) != HandlerRegistry.Refresh.SKIPPED) {
      // The rolled-back transaction had created the row (or registered the handler): again.
      claim = queries.relock(tx.connection(), streamId, 0);
    }
    if (claim == null) {
      return java.util.Optional.empty();
    }
    StreamRun run = new StreamRun(claim);
    EventRows.Row event = stale.event();
    return java.util.Optional.of(
        new Delivery(
            event.envelope(),
            claim.failures(),
            logKeys(Long.toString(claim.streamId()), event.offset(), claim.checkpoint()),
            new Step(run, event, claim.checkpoint(), null)));
  }

  /**
   * The MDC keys of a stream delivery: its stream, the event's offset and the handler's checkpoint
   * in that stream when the delivery was acquired.
   */
  private static Map<String, String> logKeys(String streamId, long offset, long checkpoint) {
    return Map.of(
        "streamId",
        streamId,
        "offset",
        Long.toString(offset),
        "checkpoint",
        Long.toString(checkpoint));
  }

  private Step step(Delivery delivery) {
    if (!(delivery.driverState() instanceof Step s)) {
      throw new IllegalArgumentException("delivery was not acquired by this driver: " + delivery);
    }
    return s;
  }
}
