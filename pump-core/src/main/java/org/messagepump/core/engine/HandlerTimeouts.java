package org.messagepump.core.engine;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.messagepump.core.HandlerTimeoutException;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pump's handler timeouts: a watch per delivery that, at expiry, refuses the pump's connection
 * to the handler, interrupts the worker and cancels the statement the handler is running on that
 * connection. The delivery's transaction stays open: its row lock, the claim, is held until the
 * handler has returned and the pump has recorded the failure (rolled back to the delivery's
 * savepoint, postponed with the failure counted or parked) and committed. The delivery therefore
 * never becomes due, in this process or another, while its handler still runs or before its failure
 * is counted; {@code maxFailures} bounds its runs.
 *
 * <p>Why not abort the connection, which frees the worker's transaction at once: the abort ends the
 * transaction, and with it the row lock, before the failure can be written. The delivery is then
 * due again, uncounted, while a handler that ignores the interrupt is still running, and another
 * worker takes it. Nor can another connection write the failure first: the row is locked by the
 * handler's transaction until that transaction ends.
 *
 * <p>The cancel ({@link PGConnection#cancelQuery()}) opens a short connection of its own to the
 * server, not one of the pool's, and returns once the server has signalled the backend. It is sent
 * only while the delivery's savepoint exists and never after the worker has taken the connection
 * back ({@link Watch#finish()}): a cancel that arrives when no statement runs is discarded by the
 * server, so it cannot hit the pump's own bookkeeping.
 *
 * <p>A handler that ignores the interrupt keeps its worker until it returns; it is interrupted (and
 * its statement cancelled) again at every further period of its timeout, at least every second, and
 * logged once as still running.
 *
 * <p>One timer thread per pump that has a timeout, started lazily; none otherwise.
 */
final class HandlerTimeouts {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);

  static final HandlerTimeouts NONE = new HandlerTimeouts("", null, Map.of(), null);

  /** The shortest period between two interrupts (and cancels) of a handler past its timeout. */
  private static final Duration MIN_REPEAT = Duration.ofSeconds(1);

  private final String pumpName;
  private final Duration perPump;
  private final Map<String, Duration> perType;
  private final ThreadFactory threadFactory;
  private ScheduledThreadPoolExecutor timer;

  HandlerTimeouts(
      String pumpName, Duration perPump, Map<String, Duration> perType, ThreadFactory factory) {
    this.pumpName = pumpName;
    this.perPump = perPump;
    this.perType = Map.copyOf(perType);
    this.threadFactory = factory;
  }

  /** The timeout of a message type, or null for none. */
  Duration timeoutOf(String messageType) {
    Duration d = perType.get(messageType);
    return d != null ? d : perPump;
  }

  /**
   * Starts watching the current thread's handling of a delivery of {@code messageType}; {@code
   * guard} is the pump's connection as the handler sees it, or null in lease mode.
   */
  Watch start(String messageType, HandlerConnection guard) {
    Duration timeout = timeoutOf(messageType);
    if (timeout == null) {
      return Watch.UNWATCHED;
    }
    Watch w = new Watch(this, timeout, Thread.currentThread(), guard);
    synchronized (w) {
      try {
        w.pending = timer().schedule(w::expire, timeout.toNanos(), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        return Watch.UNWATCHED; // the pump is closed: a batch still finishing runs unwatched
      }
    }
    return w;
  }

  private synchronized ScheduledThreadPoolExecutor timer() {
    if (timer == null) {
      timer =
          new ScheduledThreadPoolExecutor(
              1,
              r -> {
                Thread t = threadFactory.newThread(r);
                t.setName("pump-" + pumpName + "-timeouts");
                t.setDaemon(true);
                return t;
              });
      timer.setRemoveOnCancelPolicy(true);
      // The thread ends after a minute without watches (a PumpTester has no close), and comes back
      // with the next one.
      timer.setKeepAliveTime(1, TimeUnit.MINUTES);
      timer.allowCoreThreadTimeOut(true);
    }
    return timer;
  }

  /** Stops the timer thread (at the pump's close). */
  synchronized void shutdown() {
    if (timer != null) {
      timer.shutdownNow();
    }
  }

  /** One delivery's watch. Its state changes under its own monitor. */
  static final class Watch {
    static final Watch UNWATCHED = new Watch(NONE, null, null, null);

    private static final int RUNNING = 0;
    private static final int TIMED_OUT = 1;
    private static final int FINISHED = 2;

    private final HandlerTimeouts owner;
    private final Duration timeout;
    private final Thread worker;
    private final HandlerConnection guard;
    private int state = RUNNING;
    private boolean cancellable;
    private boolean loggedStillRunning;
    private long expiredAt;
    private ScheduledFuture<?> pending;
    private final long startedAt = System.nanoTime();

    private Watch(HandlerTimeouts owner, Duration timeout, Thread worker, HandlerConnection guard) {
      this.owner = owner;
      this.timeout = timeout;
      this.worker = worker;
      this.guard = guard;
    }

    /** At expiry, on the timer thread. */
    private synchronized void expire() {
      if (state != RUNNING) {
        return;
      }
      state = TIMED_OUT;
      expiredAt = System.nanoTime();
      log.warn(
          "{}: handler ran past its timeout of {}; interrupting it and cancelling its statement",
          owner.pumpName,
          timeout);
      // In lease mode there is no pump connection (guard null): the interrupt is all there is,
      // and the lease stays extended until the handler returns.
      cancellable =
          guard != null
              && guard.refuse(
                  "the handler ran past its timeout of "
                      + timeout
                      + "; the pump's connection is refused to it from now on");
      stopHandler();
      repeat();
    }

    /** Again while a timed-out handler has not returned. */
    private synchronized void again() {
      if (state != TIMED_OUT) {
        return;
      }
      if (!loggedStillRunning) {
        loggedStillRunning = true;
        log.warn(
            "{}: handler still running {} ms after its timeout of {}: it ignores the interrupt."
                + " Its worker and the delivery's transaction stay held (the delivery is not due"
                + " anywhere) until it returns; its failure is counted then",
            owner.pumpName,
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - expiredAt),
            timeout);
      }
      stopHandler();
      repeat();
    }

    private void repeat() {
      long period = Math.max(timeout.toNanos(), MIN_REPEAT.toNanos());
      try {
        pending = owner.timer().schedule(this::again, period, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        pending = null; // the pump is closed
      }
    }

    private void stopHandler() {
      worker.interrupt();
      if (!cancellable) {
        return; // the handler sent no statement through the pump's connection
      }
      try {
        guard.target().unwrap(PGConnection.class).cancelQuery();
      } catch (Exception | LinkageError e) {
        // Not pgjdbc underneath (a test double), or the cancel's own connection failed: the
        // interrupt is all there is; the handler keeps the worker until it returns.
        log.debug("{}: cancelling a timed-out handler's statement failed: {}", owner.pumpName, e);
      }
    }

    /**
     * On the worker thread while the watch runs: the timeout exception when the timeout has expired
     * (or the handler has run past it while the timer thread was kept off the CPU), else null. The
     * watch goes on: {@link #finish()} still ends it.
     */
    HandlerTimeoutException expired() {
      if (timeout == null) {
        return null;
      }
      boolean expired;
      synchronized (this) {
        expired = state == TIMED_OUT;
      }
      return expired || System.nanoTime() - startedAt >= timeout.toNanos()
          ? new HandlerTimeoutException(timeout)
          : null;
    }

    /**
     * Ends the watch on the worker thread once the handler has returned; returns the timeout
     * exception when it expired (the worker's interrupt is then cleared), else null. No interrupt
     * and no cancel comes after this returns.
     */
    HandlerTimeoutException finish() {
      if (timeout == null) {
        return null;
      }
      boolean expired;
      synchronized (this) {
        expired = state == TIMED_OUT;
        state = FINISHED;
        if (pending != null) {
          pending.cancel(false);
        }
      }
      if (expired) {
        Thread.interrupted(); // the timeout's interrupt is spent: keep the worker usable
        return new HandlerTimeoutException(timeout);
      }
      // A handler that ran past its timeout while the timer thread was kept off the CPU (a
      // starved machine: at load 28 on 2 cores the timer once fired after a 600 ms handler had
      // returned) is timed out all the same, its writes rolled back with its savepoint.
      if (System.nanoTime() - startedAt >= timeout.toNanos()) {
        return new HandlerTimeoutException(timeout);
      }
      return null;
    }
  }
}
