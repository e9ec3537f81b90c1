package org.messagepump.core;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Outcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

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
 *       (postponed with the failure counted, or parked with a generic reason). When even that, the
 *       driver's {@code completed} or the commit fails, the batch is abandoned: the delivery at
 *       fault (or the only one of the batch) still gets its failure counted in a fresh transaction,
 *       so it parks at its policy's attempts; a larger batch whose culprit is unknown is retried
 *       one delivery per transaction (see {@link WorkerScheduler}).
 *   <li>A handler cannot end the pump's transaction: the connection it gets refuses commit,
 *       rollback, autocommit, close, abort, isolation changes and unwrapping ({@link
 *       HandlerConnection}); after it returns, the pump checks that its transaction is still open.
 * </ul>
 */
final class DeliveryRunner {

  private static final Logger log = LoggerFactory.getLogger(MessagePump.class);

  /** What became of a batch, for the dispatcher. */
  enum BatchResult {
    /** Committed: every delivery moved forward. */
    COMMITTED,
    /** The pump's connection was lost; the deliveries come back by themselves. */
    CONNECTION_LOST,
    /** Rolled back; any culprit got its failure counted; the worker backs off. */
    ABANDONED,
    /**
     * Rolled back and the culprit is unknown: the batch's deliveries should be retried one per
     * transaction. The worker backs off.
     */
    ABANDONED_ISOLATE
  }

  private final String pumpName;
  private final DataSource dataSource;
  private final Driver driver;
  private final RetryPolicies policies;
  private final PumpMetrics metrics;
  private final HandlerTimeouts timeouts;
  private final HandlerInterceptor[] interceptors;
  private volatile boolean stopping;
  private volatile boolean parkUnsupportedLogged;
  private volatile boolean checkDeferredConstraints;
  // Whether recording outcomes currently fails: logged when it changes, not at every attempt.
  private final Object recordingState = new Object();
  private boolean recordingFails;

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
    this.dataSource = dataSource;
    this.driver = driver;
    this.policies = policies;
    this.metrics = metrics;
  }

  /** The retry policy of a delivery's message type. */
  RetryPolicy policy(Delivery d) {
    return policies.of(d.messageType());
  }

  /** From now on an interrupt of a handler means shutdown. */
  void stopping() {
    stopping = true;
  }

  /** True once the pump is stopping. */
  boolean isStopping() {
    return stopping;
  }

  /** One batch's state: the delivery at fault when it is abandoned, and why. */
  private static final class Batch {
    Delivery culprit;
    Throwable culpritCause;
    boolean connectionLost;
    Throwable lastCause; // the failure runOne recorded last, for observers
  }

  /** What became of one delivery, for {@link PumpTester}. */
  record Recorded(Delivery delivery, PumpMetrics.Result result, Throwable cause) {}

  /**
   * Handles the batch and commits; never throws. The caller closes the connection. When {@code
   * observed} is not null, what became of each delivery is added to it once the batch's transaction
   * has ended.
   */
  BatchResult run(Connection connection, List<Delivery> deliveries, List<Recorded> observed) {
    List<Recorded> seen = observed == null ? null : new ArrayList<>(deliveries.size());
    Tx tx = Tx.of(connection);
    HandlerConnection guard = new HandlerConnection(connection);
    Tx handlerTx = Tx.of(guard.connection());
    List<Recorded> results = new ArrayList<>(deliveries.size());
    List<Delivery> handled = new ArrayList<>(deliveries.size());
    Batch batch = new Batch();
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
            describe(e));
        log.debug("{}: {} failed", pumpName, step, e);
      }
    } finally {
      metrics.inFlight(-deliveries.size());
    }
    if (intact) {
      for (Recorded r : results) {
        metrics.delivered(r.delivery().messageType(), r.result());
      }
      recordingWorks();
      if (observed != null) {
        observed.addAll(seen);
      }
      return BatchResult.COMMITTED;
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
      return BatchResult.CONNECTION_LOST;
    }
    if (batch.culprit == null && deliveries.size() == 1) {
      // Alone in its transaction (a batch of one, or retried alone after an abandoned batch):
      // this delivery is the culprit.
      batch.culprit = deliveries.get(0);
      batch.culpritCause = batchError;
    }
    if (batch.culprit != null) {
      countFailureInFreshTransaction(batch.culprit, batch.culpritCause);
      return BatchResult.ABANDONED;
    }
    return BatchResult.ABANDONED_ISOLATE;
  }

  /**
   * One delivery: the handler runs on {@code handlerTx}, whose connection sets the delivery's
   * savepoint at the first statement; the pump's own bookkeeping runs on {@code tx}.
   */
  private PumpMetrics.Result runOne(
      HandlerConnection guard, Tx tx, Tx handlerTx, Delivery d, Batch batch) {
    putMdc(d);
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
        batch.culprit = d;
        batch.culpritCause = new IllegalStateException(broken);
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
      return record(guard, tx, d, outcome, batch);
    } finally {
      clearMdc(d);
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
          ? Outcome.busy(describe(e))
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

  /** Records a Busy or Failed outcome; falls back to the plainest record when that fails. */
  private PumpMetrics.Result record(
      HandlerConnection guard, Tx tx, Delivery d, Outcome outcome, Batch batch) {
    Throwable cause =
        outcome instanceof Outcome.Failed f
            ? f.cause()
            : null; // Busy: no failure counted, nothing to park
    batch.lastCause = cause;
    int failures = cause == null ? d.failures() : d.failures() + 1;
    RetryPolicy policy = policy(d);
    Savepoint savepoint;
    try {
      savepoint = guard.rollbackOrMark();
    } catch (SQLException | RuntimeException e) {
      return recordingFailed(d, cause, e, batch, false);
    }
    try {
      PumpMetrics.Result r;
      if (cause == null) {
        Outcome.Busy busy = (Outcome.Busy) outcome;
        Duration delay = RetryAfter.delay(busy.retryAfter(), policy.backoff());
        log.debug("{}: busy ({}), retry in {}", pumpName, busy.reason(), delay);
        driver.postpone(tx, d, failures, delay);
        r = PumpMetrics.Result.BUSY;
      } else if (policy.parks(failures, cause)) {
        r = park(tx, d, failures, cause);
      } else {
        Duration delay = policy.delay(failures, ThreadLocalRandom.current());
        // One line per retry; the stack trace only at DEBUG (and with the final failure when the
        // delivery is parked). Writing the same trace again and again, under the console's lock,
        // slowed every worker.
        log.warn(
            "{}: delivery failed (attempt {}), retry in {}: {}",
            pumpName,
            failures,
            delay,
            describe(cause));
        log.debug("{}: failure of attempt {}", pumpName, failures, cause);
        driver.postpone(tx, d, failures, delay);
        r = PumpMetrics.Result.FAILED;
      }
      return r;
    } catch (SQLException | RuntimeException e) {
      if (isConnectionLost(e, guard.target())) {
        return recordingFailed(d, cause, e, batch, true);
      }
      noteRecordingFailure(e);
      // Second try, in the plainest form: the reason (or something else of this delivery's) may be
      // what the database refused.
      try {
        guard.target().rollback(savepoint);
        if (cause != null && policy.parks(failures, cause)) {
          parkPlainly(tx, d, failures, e);
          return PumpMetrics.Result.PARKED;
        }
        driver.postpone(
            tx,
            d,
            failures,
            cause == null
                ? RetryAfter.delay(((Outcome.Busy) outcome).retryAfter(), policy.backoff())
                : policy.delay(failures, ThreadLocalRandom.current()));
        return cause == null ? PumpMetrics.Result.BUSY : PumpMetrics.Result.FAILED;
      } catch (SQLException | RuntimeException again) {
        return recordingFailed(d, cause, again, batch, isConnectionLost(again, guard.target()));
      }
    }
  }

  private PumpMetrics.Result recordingFailed(
      Delivery d, Throwable cause, Exception e, Batch batch, boolean connectionLost) {
    if (connectionLost) {
      log.info("{}: connection lost while recording the outcome ({})", pumpName, e.getMessage());
      batch.connectionLost = true;
    } else {
      noteRecordingFailure(e);
      batch.culprit = d;
      batch.culpritCause = cause != null ? cause : e;
    }
    return PumpMetrics.Result.ABANDONED;
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
        return Outcome.busy(describe(e));
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

  PumpMetrics.Result park(Tx tx, Delivery d, int failures, Throwable cause) throws SQLException {
    String reason = Inputs.reason(reason(cause));
    RetryPolicy policy = policy(d);
    try {
      driver.park(tx, d, failures, reason);
      log.warn(
          "{}: delivery parked after {} failures{}: {}",
          pumpName,
          failures,
          failures < policy.maxAttempts() ? " (a failure its retry policy does not retry)" : "",
          describe(cause));
      log.debug("{}: final failure", pumpName, cause);
      return PumpMetrics.Result.PARKED;
    } catch (UnsupportedOperationException e) {
      if (!parkUnsupportedLogged) {
        parkUnsupportedLogged = true;
        log.warn(
            "{}: {} cannot park; deliveries past their retry policy's attempts are postponed by"
                + " its cap",
            pumpName,
            driver.name());
      }
      driver.postpone(tx, d, failures, policy.backoffCap());
      return PumpMetrics.Result.FAILED;
    }
  }

  /** Parks with a reason that holds nothing of the delivery's: the real one was refused. */
  void parkPlainly(Tx tx, Delivery d, int failures, Exception refused) throws SQLException {
    String reason =
        "parked after "
            + failures
            + " failures; the failure's own reason could not be stored ("
            + sqlState(refused)
            + ")";
    try {
      driver.park(tx, d, failures, reason);
    } catch (UnsupportedOperationException e) {
      driver.postpone(tx, d, failures, policy(d).backoffCap());
    }
    log.warn("{}: delivery parked after {} failures (plain reason)", pumpName, failures);
  }

  /**
   * Counts a failure of a delivery in a new transaction after its batch was abandoned, so that a
   * delivery whose outcome cannot be recorded, or whose commit fails, still parks at its policy's
   * attempts instead of coming back for ever. Its row lock was released with the rollback: the
   * driver locks it again ({@link Driver#reacquire}) and returns its current state, or nothing when
   * another worker has taken it meanwhile (then that worker's attempt decides).
   */
  private void countFailureInFreshTransaction(Delivery stale, Throwable cause) {
    putMdc(stale);
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      Tx tx = Tx.of(c);
      try {
        java.util.Optional<Delivery> again = driver.reacquire(tx, stale);
        if (again.isEmpty()) {
          c.commit();
          log.warn(
              "{}: delivery failed and its batch was abandoned; {} cannot count the failure"
                  + " after a rollback (or another worker has it), so it returns uncounted: {}",
              pumpName,
              driver.name(),
              describe(cause));
          return;
        }
        Delivery d = again.get();
        int failures = d.failures() + 1;
        RetryPolicy policy = policy(d);
        if (policy.parks(failures, cause)) {
          try {
            park(tx, d, failures, cause);
          } catch (SQLException | RuntimeException e) {
            Transactions.rollbackQuietly(c);
            parkPlainly(tx, d, failures, e);
          }
        } else {
          log.warn(
              "{}: delivery failed (attempt {}) and its batch was abandoned: {}",
              pumpName,
              failures,
              describe(cause));
          driver.postpone(tx, d, failures, policy.delay(failures, ThreadLocalRandom.current()));
        }
        c.commit();
      } catch (SQLException | RuntimeException e) {
        Transactions.rollbackQuietly(c);
        throw e;
      }
    } catch (SQLException | RuntimeException e) {
      noteRecordingFailure(e);
    } finally {
      clearMdc(stale);
    }
  }

  /** Logs that recording outcomes fails, once until it works again. */
  private void noteRecordingFailure(Exception e) {
    boolean first;
    synchronized (recordingState) {
      first = !recordingFails;
      recordingFails = true;
    }
    if (first) {
      log.warn(
          "{}: recording an outcome failed ({}); falling back to a plain record. Logged once until"
              + " recording works again",
          pumpName,
          describe(e));
    }
    log.debug("{}: recording an outcome failed", pumpName, e);
  }

  private void recordingWorks() {
    if (recordingFails) { // racy read is fine: a flag for a log line
      synchronized (recordingState) {
        if (recordingFails) {
          recordingFails = false;
          log.info("{}: recording outcomes works again", pumpName);
        }
      }
    }
  }

  /** True when {@code e} is a connection error and the pump's connection is really broken. */
  private static boolean isConnectionLost(Throwable e, Connection own) {
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

  private static String sqlState(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s && s.getSQLState() != null) {
        return "SQLSTATE " + s.getSQLState();
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return e.getClass().getSimpleName();
  }

  /**
   * A throwable for a log line: its class and message, made printable and cut to length. Data the
   * parser quoted from a payload ({@link UndecodableMessageException#detail()}) is left out: it
   * goes to DEBUG only.
   */
  static String describe(Throwable t) {
    String m = t.getMessage();
    if (m != null && sqlException(t)) {
      // PostgreSQL's "Detail:" and "Where:" lines quote the row's values (a duplicate key, say):
      // data, which stays out of WARN lines. The stored reason keeps them.
      int nl = m.indexOf('\n');
      m = nl < 0 ? m : m.substring(0, nl);
    }
    return t.getClass().getSimpleName() + (m == null ? "" : ": " + oneLine(cut(m, 500)));
  }

  private static boolean sqlException(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SQLException) {
        return true;
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return false;
  }

  /**
   * A message for a single log line: line breaks shown as {@code " | "} (a PostgreSQL error's
   * "Detail:" line, or a handler's message forging log lines), other control characters replaced.
   */
  static String oneLine(String s) {
    return Inputs.reason(s.replace("\r\n", " | ").replace('\r', '\n').replace("\n", " | "))
        .replace('\t', ' ');
  }

  /** A throwable as the reason stored with a parked delivery: includes the parser's detail. */
  static String reason(Throwable t) {
    String m = t.getMessage();
    String d = t.getClass().getSimpleName() + (m == null ? "" : ": " + oneLine(cut(m, 1_500)));
    if (t instanceof UndecodableMessageException u && u.detail() != null) {
      d = d + ": " + u.detail();
    }
    return d;
  }

  private static String cut(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "...";
  }

  void putMdc(Delivery d) {
    MDC.put("pump", pumpName);
    MDC.put("messageId", d.messageId());
    MDC.put("messageType", d.messageType());
    MDC.put("attempt", Integer.toString(d.attempt()));
    if (d.stream() != null) {
      MDC.put("streamId", d.stream().streamId());
      MDC.put("offset", Long.toString(d.stream().eventOffset()));
    }
  }

  static void clearMdc(Delivery d) {
    MDC.remove("pump");
    MDC.remove("messageId");
    MDC.remove("messageType");
    MDC.remove("attempt");
    if (d.stream() != null) {
      MDC.remove("streamId");
      MDC.remove("offset");
    }
  }
}
