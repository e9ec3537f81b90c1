package org.messagepump.core;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.core.spi.Tx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Runs one acquired batch on a worker: each delivery in its own savepoint, the outcome mapped to
 * bookkeeping, one commit. A lost connection or failed commit ends the batch: nothing is written
 * and the deliveries come back by themselves.
 */
final class DeliveryRunner {

  private static final Logger log = LoggerFactory.getLogger(MessagePump.class);

  private final String pump;
  private final Driver driver;
  private final Backoff backoff;
  private final int maxFailures;
  private final PumpMetrics metrics;
  private volatile boolean parkUnsupportedLogged;

  DeliveryRunner(
      String pump, Driver driver, Backoff backoff, int maxFailures, PumpMetrics metrics) {
    this.pump = pump;
    this.driver = driver;
    this.backoff = backoff;
    this.maxFailures = maxFailures;
    this.metrics = metrics;
  }

  /** Handles the batch and commits; never throws. The caller closes the connection. */
  void run(Connection connection, List<Delivery> deliveries) {
    Tx tx = Tx.of(connection);
    LazySavepoint guard = new LazySavepoint(connection);
    Tx handlerTx = Tx.of(guard.connection());
    Map<PumpMetrics.Result, Integer> results = new EnumMap<>(PumpMetrics.Result.class);
    List<Delivery> handled = new ArrayList<>(deliveries.size());
    metrics.inFlight(deliveries.size());
    boolean intact = true;
    String step = "commit";
    try {
      for (Delivery d : deliveries) {
        PumpMetrics.Result r = runOne(guard, tx, handlerTx, d);
        if (r == PumpMetrics.Result.ABANDONED) {
          intact = false;
          break;
        }
        if (r == PumpMetrics.Result.HANDLED) {
          handled.add(d);
        }
        results.merge(r, 1, Integer::sum);
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
      if (SqlStates.classify(e) == SqlStates.Kind.CONNECTION) {
        log.info(
            "{}: {} failed, connection lost; {} deliveries will return",
            pump,
            step,
            deliveries.size());
      } else {
        log.warn("{}: {} failed; {} deliveries will return", pump, step, deliveries.size(), e);
      }
    } finally {
      metrics.inFlight(-deliveries.size());
    }
    if (intact) {
      results.forEach(metrics::delivered);
    } else {
      Transactions.rollbackQuietly(connection);
      metrics.delivered(PumpMetrics.Result.ABANDONED, deliveries.size());
    }
  }

  /**
   * One delivery: the handler runs on {@code handlerTx}, whose connection sets the delivery's
   * savepoint at the first statement ({@link LazySavepoint}); the pump's own bookkeeping runs on
   * {@code tx}.
   */
  private PumpMetrics.Result runOne(LazySavepoint guard, Tx tx, Tx handlerTx, Delivery d) {
    putMdc(d);
    try {
      guard.arm();
      Outcome outcome;
      try {
        outcome = handle(handlerTx, d);
      } finally {
        guard.disarm();
      }
      if (outcome == null) {
        return PumpMetrics.Result.ABANDONED;
      }
      try {
        if (outcome instanceof Outcome.Handled) {
          // No RELEASE SAVEPOINT: the commit releases it, and it would cost a round trip.
          return PumpMetrics.Result.HANDLED;
        }
        guard.rollback();
        if (outcome instanceof Outcome.Busy busy) {
          log.debug("{}: busy ({}), retry in {}", pump, busy.reason(), backoff.base());
          driver.postpone(tx, d, d.failures(), backoff.base());
          return PumpMetrics.Result.BUSY;
        }
        Throwable cause = ((Outcome.Failed) outcome).cause();
        int failures = d.failures() + 1;
        if (failures >= maxFailures) {
          return park(tx, d, failures, cause);
        }
        Duration delay = backoff.delay(failures, ThreadLocalRandom.current());
        // One line per retry; the stack trace only at DEBUG (and with the final failure when the
        // delivery is parked). A poison message retried again and again printed the same trace
        // each time, and writing it, under the console's lock, slowed every worker.
        log.warn(
            "{}: delivery failed (attempt {}), retry in {}: {}",
            pump,
            failures,
            delay,
            describe(cause));
        log.debug("{}: failure of attempt {}", pump, failures, cause);
        driver.postpone(tx, d, failures, delay);
        return PumpMetrics.Result.FAILED;
      } catch (SQLException | RuntimeException e) {
        if (SqlStates.classify(e) == SqlStates.Kind.CONNECTION) {
          log.info("{}: connection lost while recording the outcome ({})", pump, e.getMessage());
        } else {
          log.error("{}: recording the outcome failed; the delivery will return", pump, e);
        }
        return PumpMetrics.Result.ABANDONED;
      }
    } finally {
      clearMdc(d);
    }
  }

  /** Asks the driver to handle; maps exceptions. Returns null when the transaction is lost. */
  private Outcome handle(Tx tx, Delivery d) {
    long start = System.nanoTime();
    try {
      Outcome o = driver.handle(tx, d);
      return o != null
          ? o
          : Outcome.failed(new IllegalStateException(driver.name() + " returned no outcome"));
    } catch (BusyException e) {
      return Outcome.busy(e.getMessage() == null ? "busy" : e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      log.info("{}: handler interrupted (shutdown); the delivery will return", pump);
      return null;
    } catch (Exception | LinkageError | AssertionError e) {
      switch (SqlStates.classify(e)) {
        case TRANSIENT:
          return Outcome.busy(describe(e));
        case CONNECTION:
          log.info(
              "{}: connection lost while handling ({}); the delivery will return",
              pump,
              e.getMessage());
          return null;
        default:
          return Outcome.failed(e);
      }
    } finally {
      metrics.handled(System.nanoTime() - start);
    }
  }

  private PumpMetrics.Result park(Tx tx, Delivery d, int failures, Throwable cause)
      throws SQLException {
    String reason = describe(cause);
    try {
      driver.park(tx, d, failures, reason);
      log.warn("{}: delivery parked after {} failures: {}", pump, failures, reason, cause);
      return PumpMetrics.Result.PARKED;
    } catch (UnsupportedOperationException e) {
      if (!parkUnsupportedLogged) {
        parkUnsupportedLogged = true;
        log.warn(
            "{}: {} cannot park; deliveries past maxFailures are postponed by the cap",
            pump,
            driver.name());
      }
      driver.postpone(tx, d, failures, backoff.cap());
      return PumpMetrics.Result.FAILED;
    }
  }

  static String describe(Throwable t) {
    String m = t.getMessage();
    return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }

  private void putMdc(Delivery d) {
    MDC.put("pump", pump);
    MDC.put("messageId", d.messageId());
    MDC.put("messageType", d.messageType());
    MDC.put("attempt", Integer.toString(d.attempt()));
    if (d.stream() != null) {
      MDC.put("streamId", d.stream().streamId());
      MDC.put("offset", Long.toString(d.stream().eventOffset()));
    }
  }

  private static void clearMdc(Delivery d) {
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
