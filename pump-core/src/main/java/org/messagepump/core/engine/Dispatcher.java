package org.messagepump.core.engine;

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
import org.messagepump.core.Backoff;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pump's one coordinating thread: it waits for a free worker and hands it a turn. In a turn the
 * worker opens a transaction, asks the driver for up to {@code batchSize} deliveries and, if it got
 * any, handles them in that same transaction; then it polls again at once, on the same thread, for
 * as long as its polls find work. An empty or failed poll ends the turn. When turns may start is
 * {@link Turns}'s to say: after a poll that found work one more at once; after one that found
 * nothing, one probe per {@code pollInterval} (or at a wake-up), whatever the number of workers;
 * after a failed poll, one probe per backoff.
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
final class Dispatcher implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);

  private final String pumpName;
  private final DataSource dataSource;
  private final Backoff backoff;
  private final PumpMetrics metrics;
  private final Poller poller;
  private final ExecutorService workers;
  private final Semaphore freeWorkers;
  private final Turns turns;
  private final Set<Connection> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicInteger abandonStreak = new AtomicInteger();

  // Acquisition health, guarded by `health`.
  private final Object health = new Object();
  private int failures;
  private long degradedSince;
  private long lastStateWarn;
  private Instant degradedAt; // wall clock, for health(); null while polls work
  private String lastError;
  private static final long STATE_LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);

  Dispatcher(
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
    this.backoff = backoff;
    this.metrics = metrics;
    this.poller = poller;
    this.workers = workers;
    this.freeWorkers = new Semaphore(workerCount);
    this.turns = new Turns(workerCount, pollInterval, System.nanoTime());
  }

  @Override
  public void run() {
    while (!turns.stopped()) {
      try {
        freeWorkers.acquire();
      } catch (InterruptedException e) {
        break;
      }
      if (!turns.take()) {
        freeWorkers.release();
        break;
      }
      long wakeMark = turns.wakes();
      try {
        workers.execute(() -> poll(wakeMark));
      } catch (RejectedExecutionException e) {
        freeWorkers.release();
        break;
      }
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
      while (!turns.stopped() && !turns.paused()) {
        PollResult result = pollOnce(mark);
        if (result.rolledBack()) {
          backOffAfterAbandon();
          break;
        }
        if (result != PollResult.COMMITTED) {
          break;
        }
        mark = turns.wakes();
      }
      ended = true;
    } finally {
      if (!ended) {
        turns.threw(System.nanoTime()); // an Error: the pump neither stops nor spins
      }
      freeWorkers.release();
    }
  }

  /**
   * After an abandoned batch the worker pauses, with the pump's backoff growing with consecutive
   * abandoned batches, so a batch that cannot be committed is never retried hot. Other workers go
   * on.
   */
  private void backOffAfterAbandon() {
    int streak = abandonStreak.incrementAndGet();
    turns.sleepUntil(
        System.nanoTime() + backoff.delay(streak, ThreadLocalRandom.current()).toNanos());
  }

  /** One poll and its deliveries. */
  private PollResult pollOnce(long wakeMark) {
    Connection c = null;
    boolean[] released = {false};
    try {
      c = dataSource.getConnection();
      inFlight.add(c);
      // Checked again once the connection is here: waiting for it (a busy pool) can take long
      // enough for a pause() or a close() to come in between, and a pause must open no new
      // transaction.
      if (turns.paused() || turns.stopped()) {
        return PollResult.NOTHING;
      }
      c.setAutoCommit(false);
      Connection own = c;
      Runnable release =
          () -> {
            released[0] = true;
            inFlight.remove(own);
            close(own);
          };
      PollResult result = poller.poll(c, null, this::foundWork, release);
      if (result == PollResult.NOTHING) {
        recovered();
        turns.foundNothing(wakeMark, System.nanoTime());
      } else if (result == PollResult.COMMITTED) {
        abandonStreak.set(0);
      }
      return result;
    } catch (SQLException | RuntimeException e) {
      if (c != null && !released[0]) {
        Transactions.rollbackQuietly(c);
      }
      if (!turns.stopped()) {
        pollFailed(e);
      }
      return PollResult.NOTHING;
    } finally {
      if (c != null && !released[0]) {
        inFlight.remove(c);
        close(c);
      }
    }
  }

  /** A poll acquired work (called before its deliveries are handled). */
  private void foundWork() {
    recovered();
    turns.foundWork(System.nanoTime());
  }

  private void recovered() {
    synchronized (health) {
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
  }

  private void pollFailed(Exception e) {
    metrics.acquisitionFailed();
    synchronized (health) {
      failures++;
      lastError = LogText.describe(e);
      if (degradedAt == null) {
        degradedAt = Instant.now();
      }
      turns.failed(
          System.nanoTime() + backoff.delay(failures, ThreadLocalRandom.current()).toNanos());
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
              LogText.describe(e));
        } else {
          log.debug("{}: acquisition failed again: {}", pumpName, LogText.describe(e));
        }
        log.debug("{}: acquisition failed", pumpName, e);
      } else {
        log.debug("{}: acquisition still failing: {}", pumpName, LogText.describe(e));
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
    synchronized (health) {
      return degradedAt == null
          ? PumpHealth.running()
          : new PumpHealth(PumpHealth.State.DEGRADED, degradedAt, lastError);
    }
  }

  /** Ends an idle pause now: there may be work. (A failure backoff does not.) */
  void wake() {
    turns.wake(System.nanoTime());
  }

  /**
   * Stops handing out polls until {@link #resume()}; a worker ends its turn after its current batch
   * (which commits as usual). The pump's transactions are not interrupted.
   */
  void pause() {
    turns.pause();
  }

  /** Hands out polls again after {@link #pause()}. */
  void resume() {
    turns.resume(System.nanoTime());
  }

  /** True between {@link #pause()} and {@link #resume()}. */
  boolean isPaused() {
    return turns.paused();
  }

  /** Stops handing out polls; polls already running finish. */
  void stop() {
    turns.stop();
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
