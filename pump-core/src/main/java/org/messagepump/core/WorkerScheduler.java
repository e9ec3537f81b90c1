package org.messagepump.core;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pump's one coordinating thread: it waits for a free worker and hands it a poll. The worker
 * opens a transaction, asks the driver for up to {@code batchSize} deliveries and, if it got any,
 * handles them in that same transaction. The next poll is handed out at once after a poll that
 * found work; after a poll that found nothing the dispatcher pauses for {@code pollInterval} (or
 * until woken); while polls fail it pauses with exponential backoff.
 *
 * <p>The acquire round trip runs on the worker's own connection, so polls of different workers
 * overlap instead of queueing behind one thread, and a transaction is opened only for a free
 * worker: never more than {@code workers} are open.
 *
 * <p>Why not a Resilience4j circuit breaker or retry for the "database down" state: the dispatcher
 * has exactly one action (poll again later), the delay must follow the pump's own equal-jitter
 * formula, and a breaker's half-open probe would be one more poll, which is what the backoff
 * already does; a breaker adds state without changing behaviour.
 */
final class WorkerScheduler implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(MessagePump.class);

  private final String pumpName;
  private final DataSource dataSource;
  private final Duration pollInterval;
  private final Backoff backoff;
  private final PumpMetrics metrics;
  private final Poller poller;
  private final ExecutorService workers;
  private final Semaphore freeWorkers;
  private final Set<Connection> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicInteger abandonStreak = new AtomicInteger();

  // Pause state, guarded by `signal`.
  private final Object signal = new Object();
  private long pausedUntil;
  private long wakes;
  private int failures;
  private long degradedSince;
  private long lastStateWarn;
  private Instant degradedAt; // wall clock, for health(); null while polls work
  private String lastError;
  private static final long STATE_LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);
  private volatile boolean running = true;
  private volatile boolean paused;

  WorkerScheduler(
      String pumpName,
      DataSource dataSource,
      Poller poller,
      int workerCount,
      Duration pollInterval,
      Backoff backoff,
      PumpMetrics metrics,
      ExecutorService workers) {
    this.pumpName = pumpName;
    this.dataSource = dataSource;
    this.pollInterval = pollInterval;
    this.backoff = backoff;
    this.metrics = metrics;
    this.poller = poller;
    this.workers = workers;
    this.freeWorkers = new Semaphore(workerCount);
  }

  @Override
  public void run() {
    while (running) {
      try {
        freeWorkers.acquire();
      } catch (InterruptedException e) {
        break;
      }
      if (!running || !awaitUnpaused()) {
        freeWorkers.release();
        break;
      }
      long wakeMark;
      synchronized (signal) {
        wakeMark = wakes;
      }
      try {
        workers.execute(() -> poll(wakeMark));
      } catch (RejectedExecutionException e) {
        freeWorkers.release();
        break;
      }
    }
  }

  /** Waits while paused; false when stopped. */
  private boolean awaitUnpaused() {
    synchronized (signal) {
      while (running) {
        long left = pausedUntil - System.nanoTime();
        if (left <= 0 && !paused) {
          return true;
        }
        try {
          if (paused) {
            signal.wait(); // until resume() or stop()
          } else {
            TimeUnit.NANOSECONDS.timedWait(signal, left);
          }
        } catch (InterruptedException e) {
          running = false;
        }
      }
      return false;
    }
  }

  /**
   * A worker's turn: poll, handle what was found, and poll again at once on the same thread for as
   * long as polls find work (no hand-off back and forth per delivery). An empty or failed poll ends
   * the turn and frees the worker; the dispatcher decides when the next turn starts.
   */
  private void poll(long wakeMark) {
    try {
      long mark = wakeMark;
      while (running && !paused) {
        Turn turn = pollOnce(mark);
        if (turn == Turn.ABANDONED) {
          backOffAfterAbandon();
          break;
        }
        if (turn != Turn.WORK) {
          break;
        }
        synchronized (signal) {
          mark = wakes;
        }
      }
    } finally {
      freeWorkers.release();
    }
  }

  /** What a poll came to. */
  private enum Turn {
    WORK,
    NOTHING,
    ABANDONED
  }

  /**
   * After an abandoned batch the worker pauses, with the pump's backoff growing with consecutive
   * abandoned batches, so a batch that cannot be committed is never retried hot. Other workers go
   * on.
   */
  private void backOffAfterAbandon() {
    int streak = abandonStreak.incrementAndGet();
    long until = System.nanoTime() + backoff.delay(streak, ThreadLocalRandom.current()).toNanos();
    synchronized (signal) {
      while (running) {
        long left = until - System.nanoTime();
        if (left <= 0) {
          return;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(signal, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** One poll and its deliveries. */
  private Turn pollOnce(long wakeMark) {
    Connection c = null;
    try {
      c = dataSource.getConnection();
      inFlight.add(c);
      c.setAutoCommit(false);
      switch (poller.poll(c, null)) {
        case NOTHING:
          foundNothing(wakeMark);
          return Turn.NOTHING;
        case COMMITTED:
          foundWork();
          abandonStreak.set(0);
          return Turn.WORK;
        default:
          foundWork();
          return Turn.ABANDONED;
      }
    } catch (SQLException | RuntimeException e) {
      if (c != null) {
        Transactions.rollbackQuietly(c);
      }
      if (running) {
        pollFailed(e);
      }
      return Turn.NOTHING;
    } finally {
      if (c != null) {
        inFlight.remove(c);
        close(c);
      }
    }
  }

  private void foundNothing(long wakeMark) {
    synchronized (signal) {
      recovered();
      // A wake that came while this poll ran may be for work it could not see yet: no pause then.
      if (wakes == wakeMark) {
        pausedUntil = Math.max(pausedUntil, System.nanoTime() + pollInterval.toNanos());
      }
    }
  }

  private void foundWork() {
    synchronized (signal) {
      recovered();
    }
  }

  private void recovered() {
    if (degradedSince != 0 && System.nanoTime() - lastStateWarn > STATE_LOG_INTERVAL_NANOS) {
      log.info(
          "{}: acquisition works again after {} ms and {} failed polls",
          pumpName,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - degradedSince),
          failures);
    }
    degradedSince = 0;
    failures = 0;
    degradedAt = null;
    lastError = null;
  }

  private void pollFailed(Exception e) {
    metrics.acquisitionFailed();
    synchronized (signal) {
      failures++;
      lastError = DeliveryRunner.describe(e);
      if (degradedAt == null) {
        degradedAt = Instant.now();
      }
      pausedUntil =
          System.nanoTime() + backoff.delay(failures, ThreadLocalRandom.current()).toNanos();
      if (degradedSince == 0) {
        degradedSince = System.nanoTime();
        // Several workers may alternate between failing and working polls (one bad row among
        // good ones): a new WARN at most every STATE_LOG_INTERVAL, DEBUG in between.
        long now = System.nanoTime();
        if (now - lastStateWarn >= STATE_LOG_INTERVAL_NANOS || lastStateWarn == 0) {
          lastStateWarn = now;
          log.warn(
              "{}: acquisition failed, backing off until it works again: {}",
              pumpName,
              DeliveryRunner.describe(e));
        } else {
          log.debug("{}: acquisition failed again: {}", pumpName, DeliveryRunner.describe(e));
        }
        log.debug("{}: acquisition failed", pumpName, e);
      } else {
        log.debug("{}: acquisition still failing: {}", pumpName, DeliveryRunner.describe(e));
      }
    }
  }

  private void close(Connection c) {
    try {
      c.close();
    } catch (SQLException | RuntimeException e) {
      log.debug("{}: closing a connection failed: {}", pumpName, e.getMessage());
    }
  }

  /** Running, or degraded since the first of the current run of failed polls. */
  PumpHealth health() {
    synchronized (signal) {
      return degradedAt == null
          ? PumpHealth.running()
          : new PumpHealth(PumpHealth.State.DEGRADED, degradedAt, lastError);
    }
  }

  /** Ends an idle pause now: there may be work. (A failure backoff does not.) */
  void wake() {
    synchronized (signal) {
      wakes++;
      if (failures == 0) {
        pausedUntil = 0;
      }
      signal.notifyAll();
    }
  }

  /**
   * Stops handing out polls until {@link #resume()}; a worker ends its turn after its current batch
   * (which commits as usual). The pump's transactions are not interrupted.
   */
  void pause() {
    synchronized (signal) {
      paused = true;
      signal.notifyAll();
    }
  }

  /** Hands out polls again after {@link #pause()}. */
  void resume() {
    synchronized (signal) {
      paused = false;
      pausedUntil = 0;
      signal.notifyAll();
    }
  }

  /** True between {@link #pause()} and {@link #resume()}. */
  boolean isPaused() {
    return paused;
  }

  /** Stops handing out polls; polls already running finish. */
  void stop() {
    synchronized (signal) {
      running = false;
      signal.notifyAll();
    }
  }

  /**
   * Aborts the connections of polls still in flight: their transactions roll back on the server and
   * the deliveries come back. Used when the grace period is over.
   */
  int abortInFlight() {
    int n = 0;
    for (Connection c : inFlight) {
      try {
        c.abort(Runnable::run);
        n++;
      } catch (SQLException | RuntimeException e) {
        log.debug("{}: aborting a connection failed: {}", pumpName, e.getMessage());
      }
    }
    return n;
  }
}
