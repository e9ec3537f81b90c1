package org.messagepump.balancer;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.messagepump.balancer.internal.AcquiredMessage;
import org.messagepump.balancer.internal.Acquisition;
import org.messagepump.balancer.internal.BalancerTables;
import org.messagepump.balancer.internal.DeliveryQueries;
import org.messagepump.balancer.internal.Json;
import org.messagepump.balancer.internal.LeaseQueries;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.core.BusyException;
import org.messagepump.core.Envelope;
import org.messagepump.core.Limits;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.Tx;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pump driver of one partition group: acquires the ready key with the lowest rotation (one
 * indexed statement), hands its head message to the {@link BalancedHandler}, and maps the {@link
 * Result} onto the pump's outcomes. Expired hand-off leases are reaped inside acquisition, at most
 * once per {@code reapInterval} per driver, by a {@code SKIP LOCKED} statement that is safe to run
 * from every process at once.
 */
public final class BalancerDriver implements Driver {

  /** Default: at most one message per key in flight across every process. */
  public static final boolean DEFAULT_LOCK_PARTITION = true;

  /** Default hand-off lease: 5 minutes. */
  public static final Duration DEFAULT_LEASE_DURATION = Duration.ofMinutes(5);

  /** Default interval between reaper runs of one driver: 1 second. */
  public static final Duration DEFAULT_REAP_INTERVAL = Duration.ofSeconds(1);

  /**
   * Default number of consecutive messages of one key a batch may take: 1, one message per key per
   * turn (as balancer-core).
   */
  public static final int DEFAULT_MESSAGES_PER_TURN = 1;

  /** The largest {@code messagesPerTurn}. */
  public static final int MAX_MESSAGES_PER_TURN = 1000;

  /** Default number of expired leases after which a key is parked: unlimited. */
  public static final int DEFAULT_MAX_ATTEMPTS = RetryPolicy.UNLIMITED_ATTEMPTS;

  /**
   * Default number of expired leases after which a key is parked in lease mode, where a lease that
   * expires is an attempt whose process died, froze or lost the database: 5.
   */
  public static final int DEFAULT_LEASE_MODE_MAX_ATTEMPTS = 5;

  /** Header carrying the partition key in the delivery's envelope. */
  public static final String PARTITION_KEY_HEADER = "partitionKey";

  /**
   * W3C trace-context property copied into the delivery's envelope headers when the message's
   * properties hold it (see pump-opentelemetry).
   */
  public static final String TRACEPARENT = "traceparent";

  /** W3C trace-state property, copied as {@link #TRACEPARENT}. */
  public static final String TRACESTATE = "tracestate";

  /** Header carrying the partition group in the delivery's envelope. */
  public static final String PARTITION_GROUP_HEADER = "partitionGroup";

  /**
   * The type of every balancer delivery ({@link Envelope#type()}, {@link
   * BalancedContext#messageType()}, the {@code messageType} of log lines): the balancer stores
   * opaque bytes, so there is no type to name. The group is where a message sits, not what it is:
   * it is {@link BalancedContext#group()} and the {@value #PARTITION_GROUP_HEADER} header.
   */
  public static final String MESSAGE_TYPE = "balancer.message";

  private static final Logger log = LoggerFactory.getLogger(BalancerDriver.class);
  private static final int REAP_BATCH = 100;

  private final MessageBalancer balancer;
  private final String group;
  private final BalancedHandler handler;
  private final BalancerDriverOptions options;
  private final boolean lockPartition;
  private final int messagesPerTurn;
  private final Duration leaseDuration;
  private final Duration reapInterval;
  private final int maxAttempts;
  private final String leaseOwner;
  private final Duration leaseMode; // null: transactional mode
  private final BalancerMetrics metrics;
  private final Acquisition acquisition;
  private final BalancerTables tables;
  private final Limits limits;
  private volatile long nextReap = System.nanoTime();

  BalancerDriver(MessageBalancer balancer, BalancedHandler handler, BalancerDriverOptions options) {
    BalancerDriverOptions o = options.resolved();
    this.balancer = balancer;
    this.group = balancer.group();
    this.tables = balancer.tables();
    this.limits = balancer.limits();
    this.handler = java.util.Objects.requireNonNull(handler, "handler");
    this.options = o;
    this.lockPartition = o.lockPartition();
    this.messagesPerTurn = o.messagesPerTurn();
    this.leaseDuration = o.leaseDuration();
    this.reapInterval = o.reapInterval();
    this.maxAttempts = o.maxAttempts();
    this.leaseOwner = o.leaseOwner();
    this.leaseMode = o.leaseMode();
    this.metrics = balancer.metrics();
    this.acquisition =
        new Acquisition(tables, group, balancer.dataSource(), lockPartition, messagesPerTurn);
  }

  /** In lease mode (docs/leases.md), the lease of each claim; empty in transactional mode. */
  @Override
  public java.util.Optional<Duration> lease() {
    return java.util.Optional.ofNullable(leaseMode);
  }

  /** Lease mode: extends each running message's key lease, matched by message id and token. */
  @Override
  public List<Delivery> extendLeases(Tx tx, List<Delivery> running) throws SQLException {
    if (leaseMode == null) {
      return Driver.super.extendLeases(tx, running);
    }
    List<Delivery> kept = new ArrayList<>(running.size());
    for (Delivery d : running) {
      AcquiredMessage c = state(d).claim;
      if (LeaseQueries.extend(tx, tables, c.messageId(), c.token(), leaseMode).result()
          == LeaseResult.APPLIED) {
        kept.add(d);
      }
    }
    return kept;
  }

  /**
   * Lease mode: each claimed message's key gets a lease (the claim's token, this driver's owner,
   * the expiry), as a hand-off would, with the key's failures kept; the message acquisition took
   * out is stored again. The pump commits this before the handler runs.
   */
  private void leaseClaims(Tx tx, List<Delivery> out) throws SQLException {
    for (Delivery d : out) {
      State state = state(d);
      keep(tx, state, null);
      DeliveryQueries.lease(tx.connection(), tables, state.claim, leaseOwner, leaseMode, false);
      state.run.markKeyWritten();
      state.run.markPlaced(); // the lease's end gives the key its place at the back
    }
  }

  /**
   * Lease mode: ends the lease of {@code c} keeping its message (as a requeue does) while it is
   * still this claim's, else {@link org.messagepump.core.LeaseLostException}.
   */
  private void endLease(Tx tx, AcquiredMessage c, String what) {
    fenced(LeaseQueries.requeue(tx, tables, c.messageId(), c.token(), null).result(), c, what);
  }

  /** Lease mode: throws when the lease of {@code c} is no longer this claim's. */
  private static void fenced(LeaseResult result, AcquiredMessage c, String what) {
    if (result != LeaseResult.APPLIED) {
      throw new org.messagepump.core.LeaseLostException(
          "the "
              + what
              + " of message "
              + c.messageId()
              + " was refused ("
              + result
              + "): its lease is no longer this claim's (it expired and the reaper freed it, or an"
              + " operator moved it)");
    }
  }

  @Override
  public String name() {
    return "balancer";
  }

  /**
   * Balancer pumps listen on the channel every store of their schema signals ({@code
   * messagepump_<schema>}), so new messages wake them at once.
   */
  @Override
  public java.util.Optional<String> wakeChannel() {
    return java.util.Optional.of(tables.wakeChannel());
  }

  /** The options this driver runs with (lease mode's default attempts applied). */
  public BalancerDriverOptions options() {
    return options;
  }

  /** True when at most one message per key is in flight. */
  public boolean lockPartition() {
    return lockPartition;
  }

  /**
   * The most consecutive messages of one key a batch takes (see {@link
   * BalancerDriverOptions#withMessagesPerTurn}).
   */
  public int messagesPerTurn() {
    return messagesPerTurn;
  }

  /** The default lease of a hand-off. */
  public Duration leaseDuration() {
    return leaseDuration;
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max) throws SQLException {
    long start = System.nanoTime();
    // The reaper runs even while the group is paused (BalancerOperations.pauseGroup), so expired
    // hand-offs are requeued; the acquisition statement itself checks the pause and then returns
    // nothing, and the pump idles as on an empty poll.
    reapIfDue(tx);
    List<Acquisition.Taken> taken = acquisition.acquire(tx, max);
    List<Delivery> out = new ArrayList<>(taken.size());
    for (Acquisition.Taken t : taken) {
      out.add(delivery(t.message(), new State(t)));
    }
    if (lockPartition && leaseMode != null && !out.isEmpty()) {
      leaseClaims(tx, out);
    }
    metrics.acquired(System.nanoTime() - start);
    return out;
  }

  private void reapIfDue(Tx tx) {
    long now = System.nanoTime();
    if (now - nextReap < 0) {
      return;
    }
    DSLContext dsl = tables.dsl(tx);
    nextReap = now + reapInterval.toNanos();
    List<LeaseQueries.Expired> expired = LeaseQueries.reap(tables, dsl, group, REAP_BATCH);
    if (expired.isEmpty()) {
      return;
    }
    metrics.leasesExpired(expired.size());
    for (LeaseQueries.Expired e : expired) {
      if (e.attempts() >= maxAttempts) {
        String reason = "hand-off lease expired " + e.attempts() + " times";
        LeaseQueries.parkExpired(tables, dsl, e, reason);
        // The key is producer data: at DEBUG only; the message id identifies it at WARN.
        log.warn("balancer {}: key of message {} parked: {}", group, e.messageId(), reason);
        log.debug("balancer {}: message {} is of key {}", group, e.messageId(), e.key());
      }
    }
    log.info("balancer {}: {} expired hand-off leases freed", group, expired.size());
  }

  private Delivery delivery(AcquiredMessage c, State state) {
    Envelope envelope =
        new Envelope(
            Long.toString(c.messageId()),
            MESSAGE_TYPE,
            null,
            null,
            c.receivedAt().toInstant(),
            headers(c),
            c.content());
    return new Delivery(envelope, c.failures(), null, state);
  }

  /**
   * The envelope's headers: the group and the key, and the W3C trace context ({@value
   * #TRACEPARENT}, {@value #TRACESTATE}) when the message's properties hold it as top-level strings
   * (a producer that stored {@code tracing.traceHeaders()} as properties), so a tracing driver
   * (pump-opentelemetry) links the delivery to its producer. The properties are parsed only when
   * their text names {@value #TRACEPARENT}: other messages cost one substring search.
   */
  private Map<String, String> headers(AcquiredMessage c) {
    String props = c.propertiesJson();
    if (props == null || !props.contains("\"" + TRACEPARENT + "\"")) {
      return Map.of(PARTITION_GROUP_HEADER, group, PARTITION_KEY_HEADER, c.key());
    }
    Map<String, String> headers = new java.util.HashMap<>();
    headers.put(PARTITION_GROUP_HEADER, group);
    headers.put(PARTITION_KEY_HEADER, c.key());
    Map<String, Object> properties;
    try {
      properties = Json.read(props);
    } catch (UndecodableMessageException e) {
      // Not for acquisition to refuse: the handler meets it when it reads the properties.
      return headers;
    }
    for (String name : List.of(TRACEPARENT, TRACESTATE)) {
      if (properties.get(name) instanceof String value) {
        headers.put(name, value);
      }
    }
    return headers;
  }

  /**
   * A delivery's driver state: its claim; whether acquisition deleted its message ({@code deleted},
   * with lockPartition: then every outcome that keeps the message writes it back, and a success has
   * nothing left to delete), with what it saw of the key and the message's age then; and whether
   * the message is to be deleted when the batch completes (not deleted yet, and the handler
   * answered {@link Result.Ok}).
   */
  private static final class State {
    final AcquiredMessage claim;
    final boolean deleted;
    final boolean othersSeen;
    final Duration ageAtAcquisition;
    final long acquiredAt;

    /** The messages of its key this batch took with it (one, or a run), or null (not deleted). */
    final Acquisition.Run run;

    boolean remove;

    /** Not handled because an earlier message of its run was not: only written back. */
    boolean skipped;

    /** Lease mode: what the handler answered (Ok, Requeue or Handoff), ended at completion. */
    Result leaseResult;

    /** Lease mode: the checked properties of a Requeue, or null. */
    String requeueProperties;

    State(Acquisition.Taken t) {
      this.claim = t.message();
      this.deleted = t.deleted();
      this.othersSeen = t.othersSeen();
      this.ageAtAcquisition = t.age();
      this.acquiredAt = t.acquiredAt();
      this.run = t.run();
    }
  }

  /**
   * Writes the message of {@code state} back when acquisition deleted it (see {@link
   * Acquisition#restore}), with {@code properties} unless null. Returns true when the message holds
   * {@code properties} afterwards without a further update.
   */
  private boolean keep(Tx tx, State state, String properties) throws SQLException {
    if (!state.deleted) {
      return false;
    }
    return acquisition.restore(tx.connection(), state.claim, properties);
  }

  private static State state(Delivery d) {
    if (!(d.driverState() instanceof State s)) {
      throw new IllegalArgumentException("delivery was not acquired by this driver: " + d);
    }
    return s;
  }

  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    State state = state(delivery);
    AcquiredMessage c = state.claim;
    if (state.run != null && state.run.stopped()) {
      // Later messages of a key wait for the earlier ones. (A key with failures counted is given
      // runs of one by the acquisition statement itself.)
      state.skipped = true;
      return Outcome.busy("an earlier message of its key was not handled in this batch");
    }
    if (c.problem() != null) {
      metrics.handled(BalancerMetrics.UNDECODABLE, 0);
      throw new UndecodableMessageException(
          "balancer " + group + ": message " + c.messageId() + " cannot be read: " + c.problem(),
          null);
    }
    BalancedMessage message =
        new BalancedMessage(
            c.messageId(),
            group,
            c.key(),
            c.content(),
            c.propertiesJson(),
            c.receivedAt().toInstant(),
            c.attempts(),
            c.failures(),
            c.token());
    long start = System.nanoTime();
    Result result;
    try {
      result =
          handler.handle(
              message,
              new BalancedContext(balancer, tx, delivery.envelope(), delivery.attempt(), c.key()));
    } catch (Exception | Error e) {
      // Busy (a BusyException) or failed (anything else): the pump records the outcome, as it
      // does for every driver; the key's later messages of this batch wait for it.
      metrics.handled(
          e instanceof BusyException ? BalancerMetrics.BUSY : BalancerMetrics.EXCEPTION,
          System.nanoTime() - start);
      if (state.run != null) {
        state.run.stop();
      }
      throw e;
    }
    if (result == null) {
      metrics.handled(BalancerMetrics.FAILED, System.nanoTime() - start);
      if (state.run != null) {
        state.run.stop();
      }
      return Outcome.failed(new IllegalStateException("the handler returned no result"));
    }
    metrics.handled(result, System.nanoTime() - start);
    if (leaseMode != null) {
      return recordLeased(state, result);
    }
    try {
      return record(tx, state, result);
    } catch (DataAccessException e) {
      SQLException sql = e.getCause(SQLException.class);
      throw sql != null ? sql : e;
    }
  }

  /**
   * Lease mode: what the handler answered, kept for {@link #completed} (Ok, Requeue and Handoff end
   * the claim there, fenced). A handler that threw is Busy or Failed for the pump, recorded by
   * {@link #postpone} or {@link #park}, fenced too.
   */
  private Outcome recordLeased(State state, Result result) {
    if (result instanceof Result.Requeue r && r.propertiesJson() != null) {
      // Checked here, before anything is sent: a bad value is the handler's failure.
      state.requeueProperties = Json.object(r.propertiesJson(), "requeue properties", limits);
    }
    if (result instanceof Result.Handoff h && h.lease() != null) {
      Checks.positive("handoff lease", h.lease());
    }
    state.leaseResult = result; // Ok, Requeue or Handoff: the closed set
    return Outcome.HANDLED;
  }

  /**
   * Lease mode's bookkeeping of one handled message, in the pump's short transaction: Ok confirms
   * it (deleted, key freed), Requeue ends the lease keeping the message, Handoff extends the lease
   * for a confirm from outside; each only while the lease is still this claim's.
   */
  private void completeLeased(Tx tx, State state) {
    AcquiredMessage c = state.claim;
    if (state.leaseResult instanceof Result.Handoff h) {
      Duration lease = h.lease() == null ? leaseDuration : h.lease();
      fenced(
          LeaseQueries.extend(tx, tables, c.messageId(), c.token(), lease).result(), c, "hand-off");
      return;
    }
    if (state.leaseResult instanceof Result.Requeue) {
      fenced(
          LeaseQueries.requeue(tx, tables, c.messageId(), c.token(), state.requeueProperties)
              .result(),
          c,
          "requeue");
      return;
    }
    LeaseQueries.Applied applied = LeaseQueries.confirm(tx, tables, c.messageId(), c.token());
    fenced(applied.result(), c, "completion");
    if (applied.endToEnd() != null) {
      metrics.removed(applied.endToEnd());
    }
  }

  private Outcome record(Tx tx, State state, Result result) throws SQLException {
    AcquiredMessage c = state.claim;
    if (result instanceof Result.Ok) {
      state.remove = true; // deleted with the rest of the batch in completed()
      return Outcome.HANDLED;
    }
    if (state.run != null) {
      state.run.stop(); // kept: the key's later messages wait for it
    }
    if (result instanceof Result.Requeue r) {
      // Checked before anything is sent: an IllegalArgumentException is the handler's failure.
      String props =
          r.propertiesJson() == null
              ? null
              : Json.object(r.propertiesJson(), "requeue properties", limits);
      if (!keep(tx, state, props) && props != null) {
        DeliveryQueries.replaceProperties(tx.connection(), tables, c.messageId(), props);
      }
      return Outcome.HANDLED;
    }
    if (result instanceof Result.Handoff h) {
      if (!lockPartition) {
        return Outcome.failed(
            new IllegalStateException("Handoff needs lockPartition(true): a lease blocks its key"));
      }
      Duration lease =
          h.lease() == null ? leaseDuration : Checks.positive("handoff lease", h.lease());
      keep(tx, state, null);
      DeliveryQueries.lease(tx.connection(), tables, c, leaseOwner, lease);
      if (state.run != null) {
        state.run.markKeyWritten();
      }
      return Outcome.HANDLED;
    }
    throw new IllegalStateException("unknown result: " + result);
  }

  /**
   * The bookkeeping of the batch's {@link Result.Ok} deliveries: the messages acquisition did not
   * delete are deleted in one statement; then the few keys that need it: a key whose last message
   * this was is deleted, a key that had failures has them cleared.
   */
  @Override
  public void completed(Tx tx, List<Delivery> handled) throws SQLException {
    if (leaseMode != null) {
      for (Delivery d : handled) {
        completeLeased(tx, state(d));
      }
      return;
    }
    List<State> done = new ArrayList<>(handled.size());
    for (Delivery d : handled) {
      State s = state(d);
      if (s.remove) {
        done.add(s);
      }
    }
    if (done.isEmpty()) {
      moveBack(tx, handled);
      return;
    }
    long[] stored =
        done.stream().filter(s -> !s.deleted).mapToLong(s -> s.claim.messageId()).toArray();
    Map<Long, DeliveryQueries.Removed> removed =
        stored.length == 0
            ? Map.of()
            : DeliveryQueries.deleteMessages(tx.connection(), tables, stored);
    for (State s : done) {
      AcquiredMessage c = s.claim;
      boolean emptied;
      if (s.deleted) {
        metrics.removed(s.ageAtAcquisition.plusNanos(System.nanoTime() - s.acquiredAt));
        if (s.run.keyWritten()) {
          continue; // a later message of the run set the key's state (and is stored again)
        }
        // Only the last message of a run can be without a later one, and only the first can
        // have failures to clear (a key with failures has runs of one).
        emptied = !s.othersSeen;
      } else {
        DeliveryQueries.Removed r = removed.get(c.messageId());
        if (r != null) {
          metrics.removed(r.endToEnd());
        }
        emptied = r == null || !r.othersSeen();
      }
      if (emptied) {
        if (DeliveryQueries.deleteIfEmpty(tx.connection(), tables, group, c.key())) {
          if (s.run != null) {
            s.run.markPlaced();
          }
          continue;
        }
        if (s.deleted) {
          // A message was stored into the key while its last one was handled: the key joins the
          // rotation again, at the back, as a new key would.
          acquisition.rejoin(tx.connection(), c.key());
          s.run.markPlaced();
        }
      }
      if (c.failures() > 0) {
        DeliveryQueries.clearFailures(tx.connection(), tables, group, c.key());
      }
    }
    moveBack(tx, handled);
  }

  /**
   * Writes the places drawn for the keys whose turn ended in {@code handled} (Ok or Requeue), in
   * one round trip: their keys move back behind the keys that joined during the lap. A key whose
   * row was written otherwise (a hand-off's lease, a postponement) or deleted as empty is left as
   * it is.
   */
  private void moveBack(Tx tx, List<Delivery> handled) throws SQLException {
    List<String> keys = null;
    List<Long> places = null;
    for (Delivery d : handled) {
      Acquisition.Run run = state(d).run;
      if (run == null || run.place() == Acquisition.NONE || run.placed() || run.keyWritten()) {
        continue;
      }
      run.markPlaced();
      if (keys == null) {
        keys = new ArrayList<>();
        places = new ArrayList<>();
      }
      keys.add(run.key());
      places.add(run.place());
    }
    if (keys != null) {
      acquisition.moveBack(tx.connection(), keys, places);
    }
  }

  /**
   * Postpones the key. A Busy key (no failure counted) keeps its place: with lockPartition the
   * cursor goes back to just before it, so it is the first key served once it is due again. A
   * failure is the key's turn: in a lap where turns move keys back, the key takes the place its
   * acquisition drew.
   */
  @Override
  public void postpone(Tx tx, Delivery delivery, int failures, Duration delay) throws SQLException {
    State state = state(delivery);
    AcquiredMessage claim = state.claim;
    if (leaseMode != null) {
      // The lease ends (the key joins the rotation at the back), then the key waits out the delay.
      endLease(tx, claim, "postponement");
      DeliveryQueries.postpone(tx.connection(), tables, claim, failures, delay, Acquisition.NONE);
      return;
    }
    keep(tx, state, null);
    if (stopRun(state)) {
      return; // a later message of a run that stopped before it: written back, nothing else
    }
    boolean busy = failures == claim.failures();
    long place = busy || state.run == null ? Acquisition.NONE : state.run.place();
    DeliveryQueries.postpone(tx.connection(), tables, claim, failures, delay, place);
    if (busy) {
      acquisition.keepPlaceOf(claim.oldRotation());
    }
  }

  @Override
  public void park(Tx tx, Delivery delivery, int failures, String reason) throws SQLException {
    State state = state(delivery);
    if (leaseMode != null) {
      AcquiredMessage claim = state.claim;
      endLease(tx, claim, "parking");
      DeliveryQueries.park(tx.connection(), tables, claim, failures, reason);
      return;
    }
    keep(tx, state, null);
    if (stopRun(state)) {
      return;
    }
    DeliveryQueries.park(tx.connection(), tables, state.claim, failures, reason);
  }

  /**
   * Before a postponement or parking of {@code state}'s key: stops its run (the rest is written
   * back) and notes that the key's row is written. True when the delivery was skipped (a later
   * message of a run that had stopped): it must not touch the key.
   */
  private static boolean stopRun(State state) {
    state.remove = false; // a success the pump undid: the message is stored again
    if (state.run == null) {
      return false;
    }
    if (state.skipped) {
      return true;
    }
    state.run.stop();
    state.run.markKeyWritten();
    return false;
  }

  /**
   * Locks the delivery's key again after its batch was rolled back (a commit that failed on a
   * deferred constraint, say), so the pump counts its failure and parks the key at {@code
   * maxFailures}: the key row is locked {@code SKIP LOCKED} and the delivery returned with the
   * key's current failure count while its message is still the key's head (without lockPartition:
   * still there and free); else empty (another worker has it, or it moved on).
   */
  @Override
  public java.util.Optional<Delivery> reacquire(Tx tx, Delivery delivery) {
    if (leaseMode != null) {
      return java.util.Optional.empty(); // lease mode: each outcome has a transaction of its own
    }
    AcquiredMessage again =
        DeliveryQueries.relock(tables, tables.dsl(tx), state(delivery).claim, lockPartition);
    if (again == null) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(
        new Delivery(
            delivery.envelope(),
            again.failures(),
            null,
            new State(Acquisition.Taken.stored(again))));
  }
}
