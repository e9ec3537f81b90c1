package org.messagepump.core.spi;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.messagepump.core.Tx;

/**
 * What a {@link org.messagepump.core.engine.MessagePump} pumps: a driver acquires deliveries inside
 * the pump's transaction, handles them, and records postponement or parking. Every method runs
 * inside the same open transaction, which the pump commits or rolls back; a driver never commits.
 *
 * <p>The row lock taken by {@link #acquire} ({@code FOR UPDATE SKIP LOCKED}) is the claim: if the
 * process dies, PostgreSQL aborts the transaction and the delivery is free again.
 */
public interface Driver {

  /** A short name for logs and the {@code driver} tag of metrics, e.g. {@code commands}. */
  String name();

  /**
   * Acquires up to {@code max} distinct deliveries, locking them in {@code tx}. Returns an empty
   * list when nothing is due.
   */
  List<Delivery> acquire(Tx tx, int max) throws SQLException;

  /**
   * As {@link #acquire(Tx, int)}, acquiring only work the {@code gate} admits (for the command
   * queue: of the message types it admits). A driver that can filter overrides this; the default
   * ignores the gate, and whoever made the gate must then refuse what it would not have admitted
   * when it is handled (Busy with a retry-after).
   */
  default List<Delivery> acquire(Tx tx, int max, AcquisitionGate gate) throws SQLException {
    return acquire(tx, max);
  }

  /**
   * Handles one delivery inside a savepoint of {@code tx} (set lazily, just before the first
   * statement sent through {@code tx}: a delivery that sends none costs no savepoint). On {@link
   * Outcome.Handled} the driver has done its bookkeeping (delete the message, advance the
   * checkpoint) in {@code tx}, or does it for the whole batch in {@link #completed}. Any exception
   * counts as {@link Outcome.Failed}, except serialization failures, deadlocks and lock timeouts,
   * which count as {@link Outcome.Busy}.
   *
   * <p>The pump may still turn a {@link Outcome.Handled} into a failure after this returns: when
   * the transaction was aborted by an error the handler caught, when the handler ran past its
   * timeout, or (once a commit of this pump has failed) when the delivery's deferred constraints
   * are violated. It then rolls back to the delivery's savepoint and calls {@link #postpone} or
   * {@link #park}; a driver that keeps bookkeeping in memory must undo the delivery's there.
   */
  Outcome handle(Tx tx, Delivery delivery) throws Exception;

  /**
   * Called once per batch after every handler ran and before the commit, with the deliveries whose
   * outcome was {@link Outcome.Handled}, in order (never empty). A driver may do its success
   * bookkeeping here once per batch instead of once per delivery: one checkpoint write for
   * consecutive events of a stream, one statement for many messages. An exception abandons the
   * whole batch: it rolls back and every delivery of it comes back. The default does nothing.
   */
  default void completed(Tx tx, List<Delivery> handled) throws SQLException {}

  /**
   * Makes the delivery due again after {@code delay} (measured with the database clock), with
   * {@code failures} as its new failure count. The handler's writes were rolled back already.
   */
  void postpone(Tx tx, Delivery delivery, int failures, Duration delay) throws SQLException;

  /**
   * Takes a delivery out of circulation after too many failures (a dead letter, a parked stream or
   * key). The default refuses; the pump then postpones by the backoff cap instead.
   */
  default void park(Tx tx, Delivery delivery, int failures, String reason) throws SQLException {
    throw new UnsupportedOperationException(name() + " cannot park deliveries");
  }

  /**
   * Locks one delivery again, in a new transaction, after the batch that held it was rolled back
   * (its commit or the driver's {@link #completed} failed, or recording its outcome failed twice),
   * so that the pump can count its failure with {@link #postpone} or {@link #park} in {@code tx}: a
   * delivery whose batch cannot be committed must still park at {@code maxFailures} instead of
   * coming back for ever.
   *
   * <p>Return the delivery as it is now, with its current failure count and whatever driver state
   * {@code postpone} and {@code park} need, locked in {@code tx} (use {@code SKIP LOCKED}: if
   * another worker holds it, or it is gone or has moved on, return empty). The default returns
   * empty: the delivery then comes back uncounted and the worker backs off, which is safe but does
   * not park a delivery whose commit always fails.
   */
  default java.util.Optional<Delivery> reacquire(Tx tx, Delivery delivery) throws SQLException {
    return java.util.Optional.empty();
  }

  /**
   * Lease mode: empty (the default) when a delivery is held by the pump's transaction while its
   * handler runs; the length of a lease when this driver claims deliveries with a lease instead
   * (docs/leases.md). In lease mode:
   *
   * <ul>
   *   <li>{@link #acquire} records a lease on each delivery it returns (a fencing token, the
   *       holder, an expiry {@code lease} from now on the database clock), and the pump commits
   *       that transaction at once. A delivery whose earlier lease expired counts that attempt as a
   *       failure in its {@link Delivery#failures()}; the pump parks it, without running it, once
   *       that reaches {@code maxFailures}.
   *   <li>{@link #handle} runs with no transaction: its {@code tx} is {@code null}. The handler
   *       opens its own transactions if it writes.
   *   <li>While the handler runs the pump extends the lease ({@link #extendLeases}) on its own
   *       schedule, in short transactions of its own.
   *   <li>{@link #completed}, {@link #postpone} and {@link #park} run in a new short transaction,
   *       one per delivery, and are fenced: when the delivery's lease is no longer this claim's (it
   *       expired and another claim took it), they throw {@link
   *       org.messagepump.core.LeaseLostException} and change nothing.
   * </ul>
   */
  default java.util.Optional<Duration> lease() {
    return java.util.Optional.empty();
  }

  /**
   * Lease mode: extends the leases of {@code running} by {@link #lease()} from now, in {@code tx}
   * (one statement for all of them), and returns those of {@code running} whose lease is still
   * theirs (the same instances); a delivery missing from the result has lost its lease. Drivers
   * without lease mode refuse.
   */
  default List<Delivery> extendLeases(Tx tx, List<Delivery> running) throws SQLException {
    throw new UnsupportedOperationException(name() + " has no lease mode");
  }

  /**
   * A PostgreSQL {@code NOTIFY} channel that producers signal when work arrives, so an idle pump
   * wakes at once instead of at the next poll. Empty (the default) means polling only.
   */
  default java.util.Optional<String> wakeChannel() {
    return java.util.Optional.empty();
  }
}
