package org.messagepump.core.engine;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.LeaseLostException;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a batch of a lease-mode driver ({@link Driver#lease()}) after its claim has committed: each
 * handler with no transaction open while the {@link LeaseKeeper} extends its lease, then its
 * outcome recorded in a short transaction of its own through the driver's fenced bookkeeping.
 *
 * <p>The rule of the transactional runner holds: every delivery moves forward (completed, postponed
 * with its failure counted, parked) or, when its outcome cannot be recorded, its lease runs out and
 * it comes back as a failed attempt, so that it parks at its {@link RetryPolicy}'s attempts. A
 * delivery whose lease another claim took is not touched: the refusal is counted and logged once. A
 * handler timeout interrupts the handler; its lease is kept until the handler returns, so no second
 * run of it starts while it still runs anywhere its process reaches the database.
 */
final class LeaseRunner {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);

  private final String pumpName;
  private final DataSource dataSource;
  private final Driver driver;
  private final DeliveryRunner runner;
  private final PumpMetrics metrics;
  private final HandlerTimeouts timeouts;
  private final LeaseKeeper keeper;

  LeaseRunner(
      String pumpName,
      DataSource dataSource,
      Driver driver,
      DeliveryRunner runner,
      PumpMetrics metrics,
      HandlerTimeouts timeouts,
      LeaseKeeper keeper) {
    this.pumpName = pumpName;
    this.dataSource = dataSource;
    this.driver = driver;
    this.runner = runner;
    this.metrics = metrics;
    this.timeouts = timeouts;
    this.keeper = keeper;
  }

  /** The keeper of this runner's leases. */
  LeaseKeeper keeper() {
    return keeper;
  }

  /**
   * Runs {@code deliveries}, whose claim has committed, one after the other; never throws. Every
   * delivery's lease is kept from now until its turn ends, so those waiting behind a long handler
   * in the same batch keep theirs too.
   */
  void run(List<Delivery> deliveries, List<DeliveryRunner.Recorded> observed) {
    List<LeaseKeeper.Held> holds = new ArrayList<>(deliveries.size());
    for (Delivery d : deliveries) {
      holds.add(keeper.hold(d));
    }
    metrics.inFlight(deliveries.size());
    try {
      for (LeaseKeeper.Held h : holds) {
        Delivery d = h.delivery;
        LogText.putMdc(pumpName, d);
        try {
          Turn t = runOne(h);
          metrics.delivered(d.messageType(), t.result);
          if (observed != null) {
            observed.add(new DeliveryRunner.Recorded(d, t.result, t.cause));
          }
        } finally {
          keeper.release(h);
          LogText.clearMdc(d);
        }
      }
    } finally {
      for (LeaseKeeper.Held h : holds) {
        keeper.release(h);
      }
      metrics.inFlight(-deliveries.size());
    }
  }

  /** A delivery handed back uncounted at shutdown, due at once for another process. */
  private static final Outcome.Busy GIVE_BACK = new Outcome.Busy("the pump is stopping");

  private record Turn(PumpMetrics.Result result, Throwable cause) {}

  private Turn runOne(LeaseKeeper.Held h) {
    Delivery d = h.delivery;
    if (runner.isStopping()) {
      // Not started: give it back now rather than let its lease run out and count a failure.
      return record(h, GIVE_BACK);
    }
    if (d.failures() >= runner.recorder().policy(d).maxAttempts()) {
      // Only an expired lease counts a failure at the claim: an attempt that never completed, as
      // when its process died in the handler every time. It parks without running again.
      return record(
          h,
          Outcome.failed(
              new IllegalStateException(
                  "the lease of its attempt "
                      + d.failures()
                      + " expired before the attempt completed (its process died, froze or lost"
                      + " the database while the handler ran)")),
          d.failures());
    }
    Outcome outcome;
    HandlerTimeoutException timedOut;
    HandlerTimeouts.Watch watch = timeouts.start(d.messageType(), null);
    try {
      outcome = runner.handle(null, null, d, watch);
    } finally {
      timedOut = watch.finish();
    }
    if (timedOut != null) {
      outcome = Outcome.failed(timedOut);
    } else if (outcome == null) {
      outcome = GIVE_BACK; // interrupted at shutdown
    }
    return record(h, outcome);
  }

  private Turn record(LeaseKeeper.Held h, Outcome outcome) {
    int failures =
        outcome instanceof Outcome.Failed ? h.delivery.failures() + 1 : h.delivery.failures();
    return record(h, outcome, failures);
  }

  /** Records the outcome in a short transaction of its own; {@code failures} the new count. */
  private Turn record(LeaseKeeper.Held h, Outcome outcome, int failures) {
    Delivery d = h.delivery;
    keeper.release(h); // the bookkeeping below ends the lease: no beat may extend it meanwhile
    Throwable cause = outcome instanceof Outcome.Failed f ? f.cause() : null;
    try {
      return inShortTransaction(tx -> write(tx, d, outcome, failures, null), cause);
    } catch (LeaseLostException e) {
      return lost(d, e, cause);
    } catch (SQLException | RuntimeException e) {
      if (outcome instanceof Outcome.Handled) {
        return unrecorded(d, e, cause);
      }
      // Second try in the plainest form: the stored reason may be what the database refused.
      try {
        return inShortTransaction(tx -> write(tx, d, outcome, failures, e), cause);
      } catch (LeaseLostException lostNow) {
        return lost(d, lostNow, cause);
      } catch (SQLException | RuntimeException again) {
        return unrecorded(d, again, cause);
      }
    }
  }

  @FunctionalInterface
  private interface Write {
    PumpMetrics.Result in(Tx tx) throws SQLException;
  }

  private Turn inShortTransaction(Write write, Throwable cause) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        PumpMetrics.Result r = write.in(Tx.of(c));
        c.commit();
        return new Turn(r, cause);
      } catch (SQLException | RuntimeException e) {
        Transactions.rollbackQuietly(c);
        throw e;
      }
    }
  }

  private PumpMetrics.Result write(
      Tx tx, Delivery d, Outcome outcome, int failures, Exception refused) throws SQLException {
    if (outcome instanceof Outcome.Handled) {
      driver.completed(tx, List.of(d));
      return PumpMetrics.Result.HANDLED;
    }
    if (outcome == GIVE_BACK) {
      log.debug("{}: busy ({}), retry now", pumpName, GIVE_BACK.reason());
      driver.postpone(tx, d, failures, Duration.ZERO);
      return PumpMetrics.Result.BUSY;
    }
    return runner.recorder().write(tx, d, outcome, failures, refused);
  }

  private Turn lost(Delivery d, LeaseLostException e, Throwable cause) {
    metrics.leases().lost().increment();
    log.warn(
        "{}: the outcome of {} {} was refused, another claim holds it now: {}",
        pumpName,
        d.messageType(),
        d.messageId(),
        LogText.describe(e));
    return new Turn(PumpMetrics.Result.ABANDONED, cause != null ? cause : e);
  }

  private Turn unrecorded(Delivery d, Exception e, Throwable cause) {
    log.warn(
        "{}: recording the outcome of {} {} failed; its lease runs out and it comes back as a"
            + " failed attempt: {}",
        pumpName,
        d.messageType(),
        d.messageId(),
        LogText.describe(e));
    return new Turn(PumpMetrics.Result.ABANDONED, cause != null ? cause : e);
  }
}
