package org.messagepump.core.engine;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.messagepump.core.BusyException;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Outcome;
import org.messagepump.core.spi.SqlStates;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one acquired batch on a worker: each delivery in its own savepoint, the outcome mapped to
 * bookkeeping, one commit.
 *
 * <p>The rule it keeps: every batch moves each of its deliveries forward (handled; postponed with
 * its failure counted; parked), or it is abandoned and the worker backs off. In detail:
 *
 * <ul>
 *   <li>Every {@link Throwable} a handler throws is classified. Database errors by SQLState:
 *       transient ones (serialization failure, deadlock, lock timeout) are Busy; a connection error
 *       abandons the batch only if the pump's own connection is really broken (checked), otherwise
 *       it came from another connection of the handler's and is a failure. Everything else, {@link
 *       Error}s included, is a failure that counts towards the attempts of the delivery's {@link
 *       RetryPolicy} (or parks it at once when the policy does not retry it).
 *   <li>{@link VirtualMachineError} (a {@link StackOverflowError} from a handler's recursion, an
 *       {@link OutOfMemoryError} from a huge message) is counted as a failure too, not rethrown:
 *       the stack has unwound back to the pump, so the JVM is usable again, and the delivery that
 *       caused it is the likely culprit. Rethrowing would kill the worker and send the same
 *       delivery round again, uncounted, for ever. It is logged at ERROR.
 *   <li>An interrupt is a shutdown only while the pump is stopping; otherwise it is a failure.
 *   <li>A handler that ran past its timeout ({@link HandlerTimeouts}) is a failure whatever it
 *       returned, recorded like any other in the delivery's transaction, which kept its lock: the
 *       delivery is never due again before its failure is committed.
 *   <li>When recording an outcome fails for any reason other than a lost connection, the pump rolls
 *       back to the delivery's savepoint and records it again in the plainest form it has
 *       (postponed with the failure counted, or parked with a generic reason): {@link
 *       OutcomeRecorder}. When even that, the driver's {@code completed} or the commit fails, the
 *       batch is abandoned: the delivery at fault (or the only one of the batch) still gets its
 *       failure counted in a fresh transaction ({@link CulpritCounter}), so it parks at its
 *       policy's attempts; a larger batch whose culprit is unknown is retried one delivery per
 *       transaction ({@link PollResult#ABANDONED_ISOLATE}, see {@link Poller}).
 *   <li>A handler cannot end the pump's transaction: the connection it gets refuses commit,
 *       rollback, autocommit, close, abort, isolation changes and unwrapping ({@link
 *       HandlerConnection}); after it returns, the pump checks that its transaction is still open.
 * </ul>
 */
final class DeliveryRunner {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);

  private final String pumpName;
  private final Driver driver;
  private final PumpMetrics metrics;
  private final HandlerTimeouts timeouts;
  private final HandlerInterceptor[] interceptors;
  private final OutcomeRecorder recorder;
  private final CulpritCounter culprits;
  private volatile boolean stopping;
  private volatile boolean checkDeferredConstraints;

  DeliveryRunner(
      String pumpName,
      DataSource dataSource,
      Driver driver,
      RetryPolicies policies,
      PumpMetrics metrics,
      HandlerTimeouts timeouts,
      List<HandlerInterceptor> interceptors) {
    this.timeouts = timeouts;
    this.interceptors = interceptors.toArray(new HandlerInterceptor[0]);
    this.pumpName = pumpName;
    this.driver = driver;
    this.metrics = metrics;
    this.recorder = new OutcomeRecorder(pumpName, driver, policies);
    this.culprits = new CulpritCounter(pumpName, dataSource, driver, recorder);
  }

  /** Records outcomes for this runner's driver; shared with the lease runner. */
  OutcomeRecorder recorder() {
    return recorder;
  }

  /** From now on an interrupt of a handler means shutdown. */
  void stopping() {
    stopping = true;
  }

  /** True once the pump is stopping. */
  boolean isStopping() {
    return stopping;
  }

  /** What became of one delivery, for {@link PumpTester}. */
  record Recorded(Delivery delivery, PumpMetrics.Result result, Throwable cause) {}

  /**
   * Handles the batch and commits; never throws. The caller closes the connection. When {@code
   * observed} is not null, what became of each delivery is added to it once the batch's transaction
   * has ended.
   */
  PollResult run(Connection connection, List<Delivery> deliveries, List<Recorded> observed) {
    List<Recorded> seen = observed == null ? null : new ArrayList<>(deliveries.size());
    Tx tx = Tx.of(connection);
    HandlerConnection guard = new HandlerConnection(connection);
    Tx handlerTx = Tx.of(guard.connection());
    List<Recorded> results = new ArrayList<>(deliveries.size());
    List<Delivery> handled = new ArrayList<>(deliveries.size());
    BatchState batch = new BatchState();
    metrics.inFlight(deliveries.size());
    boolean intact = true;
    Throwable batchError = null;
    String step = "commit";
    try {
      for (Delivery d : deliveries) {
        batch.lastCause = null;
        PumpMetrics.Result r = runOne(guard, tx, handlerTx, d, batch);
        if (r == PumpMetrics.Result.ABANDONED) {
          intact = false;
          break;
        }
        if (seen != null) {
          seen.add(new Recorded(d, r, batch.lastCause));
        }
        if (r == PumpMetrics.Result.HANDLED) {
          handled.add(d);
        }
        results.add(new Recorded(d, r, null));
      }
      if (intact) {
        if (!handled.isEmpty()) {
          step = "the driver's completion bookkeeping";
          driver.completed(tx, handled);
          step = "commit";
        }
        connection.commit();
      }
    } catch (SQLException | RuntimeException e) {
      intact = false;
      batchError = e;
      if (isConnectionLost(e, connection)) {
        batch.connectionLost = true;
        log.info(
            "{}: {} failed, connection lost; {} deliveries will return",
            pumpName,
            step,
            deliveries.size());
      } else {
        if (step.equals("commit")) {
          commitFailed();
        }
        log.warn(
            "{}: {} failed; {} deliveries will return: {}",
            pumpName,
            step,
            deliveries.size(),
            LogText.describe(e));
        log.debug("{}: {} failed", pumpName, step, e);
      }
    } finally {
      metrics.inFlight(-deliveries.size());
    }
    if (intact) {
      for (Recorded r : results) {
        metrics.delivered(r.delivery().messageType(), r.result());
      }
      recorder.recordingWorks();
      if (observed != null) {
        observed.addAll(seen);
      }
      return PollResult.COMMITTED;
    }
    if (observed != null) {
      Throwable cause = batch.culpritCause != null ? batch.culpritCause : batchError;
      for (Delivery d : deliveries) {
        observed.add(new Recorded(d, PumpMetrics.Result.ABANDONED, cause));
      }
    }
    Transactions.rollbackQuietly(connection);
    for (Delivery d : deliveries) {
      metrics.delivered(d.messageType(), PumpMetrics.Result.ABANDONED);
    }
    if (batch.connectionLost || stopping) {
      return PollResult.CONNECTION_LOST;
    }
    if (batch.culprit == null && deliveries.size() == 1) {
      // Alone in its transaction (a batch of one, or retried alone after an abandoned batch):
      // this delivery is the culprit.
      batch.blame(deliveries.get(0), batchError);
    }
    if (batch.culprit != null) {
      culprits.count(batch.culprit, batch.culpritCause);
      return PollResult.ABANDONED;
    }
    return PollResult.ABANDONED_ISOLATE;
  }

  /**
   * One delivery: the handler runs on {@code handlerTx}, whose connection sets the delivery's
   * savepoint at the first statement; the pump's own bookkeeping runs on {@code tx}.
   */
  private PumpMetrics.Result runOne(
      HandlerConnection guard, Tx tx, Tx handlerTx, Delivery d, BatchState batch) {
    LogText.putMdc(pumpName, d);
    try {
      guard.arm();
      Outcome outcome;
      HandlerTimeoutException timedOut;
      HandlerTimeouts.Watch watch = timeouts.start(d.messageType(), guard);
      try {
        outcome = handle(guard, handlerTx, d, watch);
      } finally {
        timedOut = watch.finish();
        guard.disarm();
      }
      if (timedOut != null) {
        // Whatever the handler returned or threw: a failure, recorded below in this transaction,
        // which still holds the delivery's lock. Rolling back to the savepoint also undoes a
        // statement the timeout cancelled and whatever the handler wrote after its interrupt.
        outcome = Outcome.failed(timedOut);
      } else if (outcome == null) {
        batch.connectionLost = true;
        return PumpMetrics.Result.ABANDONED;
      }
      String broken = guard.brokenTransaction();
      if (broken != null) {
        // The handler got round the guard (for example through Statement.getConnection()) and
        // ended the transaction: nothing of this batch can be recorded in it any more.
        batch.blame(d, new IllegalStateException(broken));
        log.error(
            "{}: {}; the batch is abandoned and the delivery counted as failed", pumpName, broken);
        return PumpMetrics.Result.ABANDONED;
      }
      if (outcome instanceof Outcome.Handled
          && checkDeferredConstraints
          && guard.savepoint() != null
          && !guard.aborted()) {
        outcome = checkDeferredConstraints(guard.target(), d);
      }
      if (outcome instanceof Outcome.Handled) {
        if (!guard.aborted()) {
          // No RELEASE SAVEPOINT: the commit releases it, and it would cost a round trip.
          return PumpMetrics.Result.HANDLED;
        }
        outcome = abortedTransaction();
      }
      return recorder.record(guard, tx, d, outcome, batch);
    } finally {
      LogText.clearMdc(d);
    }
  }

  /**
   * Checks the deferred constraints of what the delivery's handler wrote, inside its savepoint: a
   * violation fails this delivery alone (counted in this transaction) instead of the commit of the
   * whole batch. The constraints stay immediate for the rest of the transaction.
   */
  private Outcome checkDeferredConstraints(Connection target, Delivery d) {
    try (java.sql.Statement st = target.createStatement()) {
      st.execute("SET CONSTRAINTS ALL IMMEDIATE");
      return Outcome.HANDLED;
    } catch (SQLException e) {
      return SqlStates.classify(e) == SqlStates.Kind.TRANSIENT
          ? Outcome.busy(LogText.describe(e))
          : Outcome.failed(e);
    }
  }

  /**
   * From the first commit that fails for a reason other than a lost connection (a deferred
   * constraint or constraint trigger), every delivery whose handler wrote has its deferred
   * constraints checked at its end ({@code SET CONSTRAINTS ALL IMMEDIATE}: one more round trip per
   * writing delivery, paid only by pumps whose commits have failed so).
   */
  private void commitFailed() {
    if (!checkDeferredConstraints) {
      checkDeferredConstraints = true;
      log.warn(
          "{}: a commit failed; from now on the deferred constraints of each delivery are checked"
              + " at its end, so that a violation fails that delivery alone",
          pumpName);
    }
  }

  private static Outcome abortedTransaction() {
    return Outcome.failed(
        new IllegalStateException(
            "the handler returned normally but its transaction is aborted by an error it"
                + " caught; the handler's writes are rolled back"));
  }

  /**
   * Asks the driver to handle, through the interceptors when there are any; classifies what it
   * throws. Returns null when the batch is lost (the pump's connection, {@code guard}'s target,
   * broke, or an interrupt at shutdown). In lease mode there is no pump connection ({@code guard}
   * and {@code tx} null): a connection error is the handler's own, a failure.
   */
  Outcome handle(HandlerConnection guard, Tx tx, Delivery d, HandlerTimeouts.Watch watch) {
    long start = System.nanoTime();
    try {
      Connection own = guard == null ? null : guard.target();
      if (interceptors.length == 0) {
        try {
          return driverOutcome(tx, d);
        } catch (Throwable e) { // every Throwable is classified: see the class comment
          return classify(own, e);
        }
      }
      Invocation invocation = new Invocation(guard, tx, d, watch);
      Outcome o = invocation.proceed();
      return invocation.lost ? null : o;
    } finally {
      metrics.handled(d.messageType(), System.nanoTime() - start);
    }
  }

  /** The driver's outcome for {@code d}; a driver that returns none has failed. */
  private Outcome driverOutcome(Tx tx, Delivery d) throws Exception {
    Outcome o = driver.handle(tx, d);
    return o != null
        ? o
        : Outcome.failed(new IllegalStateException(driver.name() + " returned no outcome"));
  }

  /** What a handler's throwable means; null when the batch is lost. */
  private Outcome classify(Connection own, Throwable e) {
    if (e instanceof BusyException b) {
      return new Outcome.Busy(
          b.getMessage() == null ? "busy" : b.getMessage(), b.retryAfter().orElse(null));
    }
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
      if (stopping) {
        log.info("{}: handler interrupted (shutdown); the delivery will return", pumpName);
        return null;
      }
      Thread.interrupted(); // not a shutdown: the handler's own affair; keep the worker usable
      return Outcome.failed(e);
    }
    if (e instanceof VirtualMachineError) {
      log.error(
          "{}: handler threw {}; counted as a failure of this delivery",
          pumpName,
          e.getClass().getName());
    }
    switch (SqlStates.classify(e)) {
      case TRANSIENT:
        return Outcome.busy(LogText.describe(e));
      case CONNECTION:
        if (own != null && connectionLost(own)) {
          log.info(
              "{}: connection lost while handling ({}); the delivery will return",
              pumpName,
              e.getMessage());
          return null;
        }
        // Another connection of the handler's (a reporting database, say) failed, not the
        // pump's: an ordinary failure, counted.
        return Outcome.failed(e);
      default:
        return Outcome.failed(e);
    }
  }

  /**
   * One delivery's way through the interceptors to the driver ({@link HandlerInterceptor}): made
   * only when interceptors are registered. {@code entered} counts the links entered so far, the
   * driver being the last: it only grows, so a second {@code proceed()} and an interceptor that
   * never proceeded are both seen.
   */
  private final class Invocation implements HandlerInterceptor.Handling {
    private final HandlerConnection guard;
    private final Tx tx;
    private final Delivery delivery;
    private final HandlerTimeouts.Watch watch;
    private int entered;
    // What the last proceed() returned: after an interceptor returns, its inner link's outcome.
    private Outcome returned;
    boolean lost;

    Invocation(HandlerConnection guard, Tx tx, Delivery delivery, HandlerTimeouts.Watch watch) {
      this.guard = guard;
      this.tx = tx;
      this.delivery = delivery;
      this.watch = watch;
    }

    @Override
    public Delivery delivery() {
      return delivery;
    }

    @Override
    public Tx tx() {
      return tx;
    }

    @Override
    public String pumpName() {
      return pumpName;
    }

    @Override
    public String driverName() {
      return driver.name();
    }

    @Override
    public Outcome proceed() {
      int link = entered++;
      if (link > interceptors.length) {
        throw new IllegalStateException("proceed() was called a second time");
      }
      Connection own = guard == null ? null : guard.target();
      if (link == interceptors.length) {
        return returned = decided(handled(own));
      }
      Outcome o;
      HandlerInterceptor interceptor = interceptors[link];
      try {
        o = interceptor.intercept(this);
        if (entered == link + 1) {
          o =
              Outcome.failed(
                  new IllegalStateException(
                      interceptor.getClass().getName() + " returned without calling proceed()"));
        } else if (o == null) {
          o =
              Outcome.failed(
                  new IllegalStateException(
                      interceptor.getClass().getName() + " returned no outcome"));
        }
      } catch (Throwable e) { // classified as a handler's: see the class comment
        o = classified(own, e);
      }
      if (o instanceof Outcome.Handled && !(returned instanceof Outcome.Handled)) {
        o = returned; // an interceptor cannot turn a busy or failed delivery into a handled one
      }
      return returned = decided(o);
    }

    /** What {@code e} means; when the batch is lost, the failure it is reported as. */
    private Outcome classified(Connection own, Throwable e) {
      Outcome o = classify(own, e);
      if (o != null) {
        return o;
      }
      lost = true;
      return Outcome.failed(e);
    }

    /** The driver's outcome; a lost batch is reported to the interceptors as a failure. */
    private Outcome handled(Connection own) {
      Outcome o;
      try {
        o = driverOutcome(tx, delivery);
      } catch (Throwable e) { // every Throwable is classified: see the class comment
        o = classified(own, e);
      }
      if (o instanceof Outcome.Handled && guard != null && guard.aborted()) {
        o = abortedTransaction();
      }
      return o;
    }

    /** {@code o} unless the handler timeout has expired meanwhile: then its failure. */
    private Outcome decided(Outcome o) {
      if (o instanceof Outcome.Failed f && f.cause() instanceof HandlerTimeoutException) {
        return o;
      }
      HandlerTimeoutException timedOut = watch.expired();
      return timedOut != null ? Outcome.failed(timedOut) : o;
    }
  }

  /** True when {@code e} is a connection error and the pump's connection is really broken. */
  static boolean isConnectionLost(Throwable e, Connection own) {
    return SqlStates.classify(e) == SqlStates.Kind.CONNECTION && connectionLost(own);
  }

  /** Checks the pump's own connection (a round trip; only on the error path). */
  static boolean connectionLost(Connection own) {
    try {
      return own.isClosed() || !own.isValid(5);
    } catch (SQLException | RuntimeException e) {
      return true;
    }
  }
}
