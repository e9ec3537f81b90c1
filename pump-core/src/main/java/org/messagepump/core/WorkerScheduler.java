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
 * The pump's one coordinating thread: it waits for a free worker and hands it a turn. In a turn the
 * worker opens a transaction, asks the driver for up to {@code batchSize} deliveries and, if it got
 * any, handles them in that same transaction; then it polls again at once, on the same thread, for
 * as long as its polls find work. An empty or failed poll ends the turn.
 *
 * <p>When turns start:
 *
 * <ul>
 *   <li>A poll that finds work lets one more worker start a turn at once (as soon as the poll has
 *       acquired, before the deliveries are handled), so a backlog brings in every worker within a
 *       few polls.
 *   <li>A poll that finds nothing stops new turns for {@code pollInterval}; turns that still find
 *       work go on. After the pause one worker polls alone (a probe), and only a probe that finds
 *       work lets others start again. An idle pump therefore sends one acquisition per {@code
 *       pollInterval}, whatever its number of workers.
 *   <li>A wake-up ({@link #wake()}: a notification, or the application) ends an idle pause: a probe
 *       starts at once. A wake that comes while a poll runs keeps that poll from pausing the pump
 *       if it finds nothing, since the work may have come after its snapshot.
 *   <li>A poll that fails stops new turns with exponential backoff; then a probe.
 * </ul>
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
  private final int workerCount;
  private final Semaphore freeWorkers;
  private final Set<Connection> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicInteger abandonStreak = new AtomicInteger();

  // Turn and pause state, guarded by `signal`.
  private final Object signal = new Object();
  // No turn starts before this (an idle pause or a failure backoff).
  private long pausedUntil;
  // Turns that may start now: each poll that found work (outside a pause) adds one.
  private int allowance;
  // One turn, a probe, may start once the pause is over (at the start, after an empty or failed
  // poll, after a wake-up).
  private boolean probeDue = true;
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
    this.workerCount = workerCount;
    this.freeWorkers = new Semaphore(workerCount);
    this.pausedUntil = System.nanoTime();
  }

  /** The later of two {@link System#nanoTime()} values (which may be negative and wrap). */
  private static long later(long a, long b) {
    return a - b >= 0 ? a : b;
  }

  @Override
  public void run() {
    while (running) {
      try {
        freeWorkers.acquire();
      } catch (InterruptedException e) {
        break;
      }
      if (!running || !awaitTurn()) {
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

  /**
   * Waits until a turn may start (not paused, no pause running, and an allowance or a probe due)
   * and takes it; false when stopped.
   */
  private boolean awaitTurn() {
    synchronized (signal) {
      while (running) {
        try {
          if (paused) {
            signal.wait(); // until resume() or stop()
            continue;
          }
          long left = pausedUntil - System.nanoTime();
          if (left > 0) {
            TimeUnit.NANOSECONDS.timedWait(signal, left);
            continue;
          }
          if (allowance > 0) {
            allowance--;
            return true;
          }
          if (probeDue) {
            probeDue = false;
            return true;
          }
          signal.wait(); // until a poll ends, finds work, or a wake-up
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
    boolean ended = false;
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
      ended = true;
    } finally {
      if (!ended) {
        // Thrown out of the turn (an Error): let a probe follow after a pause, so that the pump
        // neither stops nor spins.
        synchronized (signal) {
          probeDue = true;
          pausedUntil = later(pausedUntil, System.nanoTime() + pollInterval.toNanos());
          signal.notifyAll();
        }
      }
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
      switch (poller.poll(c, null, this::foundWork)) {
        case NOTHING:
          foundNothing(wakeMark);
          return Turn.NOTHING;
        case COMMITTED:
          abandonStreak.set(0);
          return Turn.WORK;
        default:
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

  /** An empty poll: no new turn until the pause is over, then one probe. */
  private void foundNothing(long wakeMark) {
    synchronized (signal) {
      recovered();
      allowance = 0;
      probeDue = true;
      // A wake that came while this poll ran may be for work it could not see yet: no pause then.
      if (wakes == wakeMark) {
        pausedUntil = later(pausedUntil, System.nanoTime() + pollInterval.toNanos());
      }
      signal.notifyAll();
    }
  }

  /** A poll acquired work: one more worker may start a turn now, unless a pause runs. */
  private void foundWork() {
    synchronized (signal) {
      recovered();
      if (System.nanoTime() - pausedUntil >= 0) {
        allowance = Math.min(allowance + 1, workerCount);
        signal.notifyAll();
      }
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
      allowance = 0;
      probeDue = true;
      signal.notifyAll();
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
        pausedUntil = System.nanoTime();
        probeDue = true;
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
      pausedUntil = System.nanoTime();
      probeDue = true;
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
