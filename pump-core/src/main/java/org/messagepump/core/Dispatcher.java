package org.messagepump.core;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Tx;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pump's one acquiring thread: waits for a free worker, opens a transaction, asks the driver
 * for up to {@code batchSize} deliveries and hands the open transaction to that worker. Re-polls at
 * once after a dispatch, waits {@code pollInterval} only when a poll found nothing, and backs off
 * exponentially while acquisition fails.
 *
 * <p>Why not a Resilience4j circuit breaker or retry for the "database down" state: the dispatcher
 * has exactly one caller and one action (poll again later), the delay must follow the pump's own
 * equal-jitter formula, and a breaker's half-open probing would be one more poll, which is what the
 * backoff already does; a breaker adds state without changing behaviour.
 */
final class Dispatcher implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(MessagePump.class);

  private final String pump;
  private final DataSource dataSource;
  private final Driver driver;
  private final int batchSize;
  private final Duration pollInterval;
  private final Backoff backoff;
  private final PumpMetrics metrics;
  private final DeliveryRunner runner;
  private final ExecutorService workers;
  private final Semaphore freeWorkers;
  private final Set<Connection> inFlight = ConcurrentHashMap.newKeySet();
  private final Object signal = new Object();
  private volatile boolean running = true;
  private boolean wakeRequested;

  Dispatcher(
      String pump,
      DataSource dataSource,
      Driver driver,
      int workerCount,
      int batchSize,
      Duration pollInterval,
      Backoff backoff,
      PumpMetrics metrics,
      DeliveryRunner runner,
      ExecutorService workers) {
    this.pump = pump;
    this.dataSource = dataSource;
    this.driver = driver;
    this.batchSize = batchSize;
    this.pollInterval = pollInterval;
    this.backoff = backoff;
    this.metrics = metrics;
    this.runner = runner;
    this.workers = workers;
    this.freeWorkers = new Semaphore(workerCount);
  }

  @Override
  public void run() {
    int failures = 0;
    while (running) {
      try {
        freeWorkers.acquire();
      } catch (InterruptedException e) {
        break;
      }
      if (!running) {
        freeWorkers.release();
        break;
      }
      Poll poll = poll();
      if (poll == Poll.DISPATCHED) {
        failures = recovered(failures);
        continue;
      }
      if (poll == Poll.EMPTY) {
        failures = recovered(failures);
        pause(pollInterval);
        continue;
      }
      failures++;
      pause(backoff.delay(failures, ThreadLocalRandom.current()));
    }
  }

  private enum Poll {
    DISPATCHED,
    EMPTY,
    FAILED
  }

  /** One poll; on return the worker permit is either with a worker task or released. */
  private Poll poll() {
    long start = System.nanoTime();
    Connection c = null;
    try {
      c = dataSource.getConnection();
      c.setAutoCommit(false);
      List<Delivery> deliveries = driver.acquire(Tx.of(c), batchSize);
      metrics.acquired(System.nanoTime() - start);
      if (deliveries.isEmpty()) {
        c.commit(); // a driver may write while acquiring (e.g. advance a checkpoint to the end)
        close(c);
        freeWorkers.release();
        return Poll.EMPTY;
      }
      Connection connection = c;
      inFlight.add(connection);
      try {
        workers.execute(() -> work(connection, deliveries));
      } catch (RejectedExecutionException e) {
        inFlight.remove(connection);
        throw e;
      }
      return Poll.DISPATCHED;
    } catch (SQLException | RuntimeException e) {
      metrics.acquired(System.nanoTime() - start);
      if (c != null) {
        DeliveryRunner.rollbackQuietly(c);
        close(c);
      }
      freeWorkers.release();
      if (!running) {
        return Poll.EMPTY;
      }
      metrics.acquisitionFailed();
      if (degradedSince == 0) {
        degradedSince = System.nanoTime();
        log.warn(
            "{}: acquisition failed, backing off until it works again: {}",
            pump,
            DeliveryRunner.describe(e),
            e);
      } else {
        log.debug("{}: acquisition still failing: {}", pump, DeliveryRunner.describe(e));
      }
      return Poll.FAILED;
    }
  }

  private long degradedSince;

  private int recovered(int failures) {
    if (degradedSince != 0) {
      log.info(
          "{}: acquisition works again after {} ms and {} failed polls",
          pump,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - degradedSince),
          failures);
      degradedSince = 0;
    }
    return 0;
  }

  private void work(Connection connection, List<Delivery> deliveries) {
    try {
      runner.run(connection, deliveries);
    } finally {
      inFlight.remove(connection);
      close(connection);
      freeWorkers.release();
    }
  }

  private void close(Connection c) {
    try {
      c.close();
    } catch (SQLException | RuntimeException e) {
      log.debug("{}: closing a connection failed: {}", pump, e.getMessage());
    }
  }

  /** Waits up to {@code d}, or less when woken or stopped. */
  private void pause(Duration d) {
    long deadline = System.nanoTime() + d.toNanos();
    synchronized (signal) {
      while (running && !wakeRequested) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(signal, left);
        } catch (InterruptedException e) {
          running = false;
          break;
        }
      }
      wakeRequested = false;
    }
  }

  /** Ends a pause now: there may be work. */
  void wake() {
    synchronized (signal) {
      wakeRequested = true;
      signal.notifyAll();
    }
  }

  /** Stops acquiring; the running poll, if any, finishes. */
  void stop() {
    running = false;
    wake();
  }

  /**
   * Aborts the connections of batches still in flight: their transactions roll back on the server
   * and the deliveries come back. Used when the grace period is over.
   */
  int abortInFlight() {
    int n = 0;
    for (Connection c : inFlight) {
      try {
        c.abort(Runnable::run);
        n++;
      } catch (SQLException | RuntimeException e) {
        log.debug("{}: aborting a connection failed: {}", pump, e.getMessage());
      }
    }
    return n;
  }
}
