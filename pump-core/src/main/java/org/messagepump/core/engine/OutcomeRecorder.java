package org.messagepump.core.engine;

import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.messagepump.core.RetryAfter;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Outcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records a delivery's Busy or Failed outcome through the driver's bookkeeping, for both runners:
 * postponed (Busy: after its retry-after or the backoff base; Failed: after its retry policy's
 * delay, the failure counted) or parked once its policy gives up. When the database refuses the
 * record, it is written again in the plainest form (the reason, which may be what was refused, left
 * out). A driver that cannot park is postponed by the policy's cap instead.
 */
final class OutcomeRecorder {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);

  private final String pumpName;
  private final Driver driver;
  private final RetryPolicies policies;
  private volatile boolean parkUnsupportedLogged;
  // Whether recording outcomes currently fails: logged when it changes, not at every attempt.
  private final Object recordingState = new Object();
  private boolean recordingFails;

  OutcomeRecorder(String pumpName, Driver driver, RetryPolicies policies) {
    this.pumpName = pumpName;
    this.driver = driver;
    this.policies = policies;
  }

  /** The retry policy of a delivery's message type. */
  RetryPolicy policy(Delivery d) {
    return policies.of(d.messageType());
  }

  /**
   * Records {@code outcome} (Busy or Failed) of a delivery of a transactional batch, in its
   * transaction: rolled back to the delivery's savepoint first, then the record; when the record
   * fails other than by a lost connection, rolled back to the savepoint again and recorded plainly.
   * When even that fails the batch is abandoned ({@code batch} says why).
   */
  PumpMetrics.Result record(
      HandlerConnection guard, Tx tx, Delivery d, Outcome outcome, BatchState batch) {
    Throwable cause = outcome instanceof Outcome.Failed f ? f.cause() : null;
    batch.lastCause = cause;
    int failures = cause == null ? d.failures() : d.failures() + 1;
    Savepoint savepoint;
    try {
      savepoint = guard.rollbackOrMark();
    } catch (SQLException | RuntimeException e) {
      return abandoned(d, cause, e, batch, false);
    }
    try {
      return write(tx, d, outcome, failures, null);
    } catch (SQLException | RuntimeException e) {
      if (DeliveryRunner.isConnectionLost(e, guard.target())) {
        return abandoned(d, cause, e, batch, true);
      }
      noteRecordingFailure(e);
      try {
        guard.target().rollback(savepoint);
        return write(tx, d, outcome, failures, e);
      } catch (SQLException | RuntimeException again) {
        return abandoned(
            d, cause, again, batch, DeliveryRunner.isConnectionLost(again, guard.target()));
      }
    }
  }

  /**
   * Writes a Busy or Failed outcome in {@code tx}: {@code failures} is the delivery's new failure
   * count. {@code refused}, when not null, is why a first write failed: this one is the plain form
   * (a parked delivery's stored reason holds nothing of the delivery's; no retry line is logged).
   */
  PumpMetrics.Result write(Tx tx, Delivery d, Outcome outcome, int failures, Exception refused)
      throws SQLException {
    RetryPolicy policy = policy(d);
    if (outcome instanceof Outcome.Busy busy) {
      Duration delay = RetryAfter.delay(busy.retryAfter(), policy.backoff());
      if (refused == null) {
        log.debug("{}: busy ({}), retry in {}", pumpName, busy.reason(), delay);
      }
      driver.postpone(tx, d, failures, delay);
      return PumpMetrics.Result.BUSY;
    }
    Throwable cause = ((Outcome.Failed) outcome).cause();
    if (policy.parks(failures, cause)) {
      if (refused != null) {
        parkPlainly(tx, d, failures, refused);
        return PumpMetrics.Result.PARKED;
      }
      return park(tx, d, failures, cause);
    }
    Duration delay = policy.delay(failures, ThreadLocalRandom.current());
    if (refused == null) {
      // One line per retry; the stack trace only at DEBUG (and with the final failure when the
      // delivery is parked). Writing the same trace again and again, under the console's lock,
      // slowed every worker.
      log.warn(
          "{}: delivery failed (attempt {}), retry in {}: {}",
          pumpName,
          failures,
          delay,
          LogText.describe(cause));
      log.debug("{}: failure of attempt {}", pumpName, failures, cause);
    }
    driver.postpone(tx, d, failures, delay);
    return PumpMetrics.Result.FAILED;
  }

  /** Parks {@code d} with its failure's reason (postponed by the cap if the driver cannot park). */
  PumpMetrics.Result park(Tx tx, Delivery d, int failures, Throwable cause) throws SQLException {
    String reason = Inputs.reason(LogText.reason(cause));
    RetryPolicy policy = policy(d);
    try {
      driver.park(tx, d, failures, reason);
      log.warn(
          "{}: delivery parked after {} failures{}: {}",
          pumpName,
          failures,
          failures < policy.maxAttempts() ? " (a failure its retry policy does not retry)" : "",
          LogText.describe(cause));
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
            + LogText.sqlState(refused)
            + ")";
    try {
      driver.park(tx, d, failures, reason);
    } catch (UnsupportedOperationException e) {
      driver.postpone(tx, d, failures, policy(d).backoffCap());
    }
    log.warn("{}: delivery parked after {} failures (plain reason)", pumpName, failures);
  }

  private PumpMetrics.Result abandoned(
      Delivery d, Throwable cause, Exception e, BatchState batch, boolean connectionLost) {
    if (connectionLost) {
      log.info("{}: connection lost while recording the outcome ({})", pumpName, e.getMessage());
      batch.connectionLost = true;
    } else {
      noteRecordingFailure(e);
      batch.blame(d, cause != null ? cause : e);
    }
    return PumpMetrics.Result.ABANDONED;
  }

  /** Logs that recording outcomes fails, once until it works again. */
  void noteRecordingFailure(Exception e) {
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
          LogText.describe(e));
    }
    log.debug("{}: recording an outcome failed", pumpName, e);
  }

  /** A batch committed: recording works (again). */
  void recordingWorks() {
    if (recordingFails) { // racy read is fine: a flag for a log line
      synchronized (recordingState) {
        if (recordingFails) {
          recordingFails = false;
          log.info("{}: recording outcomes works again", pumpName);
        }
      }
    }
  }
}
