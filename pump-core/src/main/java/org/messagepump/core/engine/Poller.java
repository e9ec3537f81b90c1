package org.messagepump.core.engine;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;

/**
 * One poll on an open connection: acquire up to {@code batchSize} deliveries, hand them to the
 * {@link DeliveryRunner}, and keep the isolation rule. The one poll path: the pump's workers
 * ({@link Dispatcher}) and {@link PumpTester} both run it.
 */
final class Poller {

  private final Driver driver;
  private final DeliveryRunner runner;
  private final int batchSize;
  private final PumpMetrics metrics;
  private final AtomicInteger isolatedPolls = new AtomicInteger();
  private final LeaseRunner leases;

  Poller(Driver driver, DeliveryRunner runner, int batchSize, PumpMetrics metrics) {
    this(driver, runner, batchSize, metrics, null);
  }

  /** A poller whose driver is in lease mode when {@code leases} is not null. */
  Poller(
      Driver driver,
      DeliveryRunner runner,
      int batchSize,
      PumpMetrics metrics,
      LeaseRunner leases) {
    this.driver = driver;
    this.runner = runner;
    this.batchSize = batchSize;
    this.metrics = metrics;
    this.leases = leases;
  }

  /** The lease mode's runner, or null for a transactional driver. */
  LeaseRunner leases() {
    return leases;
  }

  /**
   * Polls once on {@code c} (autocommit off, owned by the caller, who closes it). Acquisition
   * errors are thrown; the caller rolls back and backs off.
   *
   * <p>After a batch was abandoned with its culprit unknown (its commit or the driver's completion
   * failed), as many polls as it had deliveries take one delivery each. The delivery that cannot be
   * committed then fails alone and is counted (in its own transaction when its deferred constraints
   * are checked at its end, else in a fresh one), so it parks; the others are handled.
   */
  PollResult poll(Connection c, List<DeliveryRunner.Recorded> observed) throws SQLException {
    return poll(c, observed, null, null);
  }

  /**
   * As {@link #poll(Connection, List)}; {@code acquired}, when not null, runs as soon as the poll
   * has found work, before the deliveries are handled (the pump's workers then let one more worker
   * poll). In lease mode the claim commits before the handlers run, and {@code release}, when not
   * null, then gives the connection back: no transaction and no connection is held while a leased
   * handler runs.
   */
  PollResult poll(
      Connection c, List<DeliveryRunner.Recorded> observed, Runnable acquired, Runnable release)
      throws SQLException {
    long start = System.nanoTime();
    boolean isolated = isolatedPolls.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
    List<Delivery> deliveries;
    try {
      deliveries = driver.acquire(Tx.of(c), isolated ? 1 : batchSize);
    } finally {
      metrics.acquired(System.nanoTime() - start);
    }
    if (deliveries.isEmpty()) {
      c.commit(); // a driver may write while acquiring (e.g. advance a checkpoint to the end)
      return PollResult.NOTHING;
    }
    if (leases != null) {
      c.commit(); // the claim: the leases are recorded before any handler runs
      if (release != null) {
        release.run();
      }
      if (acquired != null) {
        acquired.run();
      }
      leases.run(deliveries, observed);
      return PollResult.COMMITTED;
    }
    if (acquired != null) {
      acquired.run();
    }
    PollResult result = runner.run(c, deliveries, observed);
    if (result == PollResult.ABANDONED_ISOLATE) {
      isolatedPolls.addAndGet(deliveries.size());
    }
    return result;
  }
}
