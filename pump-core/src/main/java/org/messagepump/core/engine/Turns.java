package org.messagepump.core.engine;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * When the workers of a pump may start a turn (a run of polls on one thread, see {@link
 * Dispatcher}). The rules:
 *
 * <ul>
 *   <li>A poll that finds work lets one more turn start at once, so a backlog brings in every
 *       worker within a few polls.
 *   <li>A poll that finds nothing stops new turns for {@code pollInterval} (turns that still find
 *       work go on); then one turn may start alone, a probe, and only a probe that finds work lets
 *       others start. An idle pump therefore polls once per {@code pollInterval}, whatever its
 *       number of workers.
 *   <li>A wake-up ends an idle pause: a probe may start at once. A wake that comes while a poll
 *       runs keeps that poll from pausing the pump if it finds nothing (the work may have come
 *       after its snapshot).
 *   <li>A failed poll stops new turns until its backoff is over, which a wake-up does not end; then
 *       a probe.
 * </ul>
 *
 * <p>Times are {@link System#nanoTime()} values given by the caller, so the rules can be checked
 * without waiting. Thread-safe; {@link #take()} blocks the scheduling thread.
 */
final class Turns {

  private final int workers;
  private final long pollIntervalNanos;

  // Guarded by this.
  private long pausedUntil; // no turn starts before this
  private int allowance; // turns that may start now
  private boolean probeDue = true; // one turn may start once the pause is over
  private boolean failing; // the last poll failed: a wake-up does not end the pause
  private long wakes;
  private volatile boolean paused;
  private volatile boolean stopped;

  Turns(int workers, Duration pollInterval, long now) {
    this.workers = workers;
    this.pollIntervalNanos = pollInterval.toNanos();
    this.pausedUntil = now;
  }

  /**
   * Takes a turn if one may start at {@code now} and returns 0; otherwise how long to wait before
   * asking again ({@link Long#MAX_VALUE}: until something changes).
   */
  synchronized long tryTake(long now) {
    if (stopped || paused) {
      return Long.MAX_VALUE;
    }
    long left = pausedUntil - now;
    if (left > 0) {
      return left;
    }
    if (allowance > 0) {
      allowance--;
      return 0;
    }
    if (probeDue) {
      probeDue = false;
      return 0;
    }
    return Long.MAX_VALUE;
  }

  /** Waits until a turn may start and takes it; false once stopped (or interrupted). */
  synchronized boolean take() {
    while (!stopped) {
      long wait = tryTake(System.nanoTime());
      if (wait == 0) {
        return true;
      }
      try {
        if (wait == Long.MAX_VALUE) {
          wait();
        } else {
          TimeUnit.NANOSECONDS.timedWait(this, wait);
        }
      } catch (InterruptedException e) {
        stopped = true;
      }
    }
    return false;
  }

  /** How many wake-ups there have been: a poll notes it when it starts. */
  synchronized long wakes() {
    return wakes;
  }

  /** A poll acquired work: one more turn may start now, unless a pause runs. */
  synchronized void foundWork(long now) {
    failing = false;
    if (now - pausedUntil >= 0) {
      allowance = Math.min(allowance + 1, workers);
      notifyAll();
    }
  }

  /**
   * A poll that started when {@link #wakes()} was {@code wakeMark} found nothing: no new turn for
   * {@code pollInterval} (none at all if a wake-up came meanwhile), then one probe.
   */
  synchronized void foundNothing(long wakeMark, long now) {
    failing = false;
    allowance = 0;
    probeDue = true;
    if (wakes == wakeMark) {
      pausedUntil = later(pausedUntil, now + pollIntervalNanos);
    }
    notifyAll();
  }

  /** A poll failed: no new turn before {@code until}, then one probe. */
  synchronized void failed(long until) {
    failing = true;
    allowance = 0;
    probeDue = true;
    pausedUntil = until;
    notifyAll();
  }

  /** A turn ended by throwing: a probe after a pause, so that the pump neither stops nor spins. */
  synchronized void threw(long now) {
    probeDue = true;
    pausedUntil = later(pausedUntil, now + pollIntervalNanos);
    notifyAll();
  }

  /** There may be work: ends an idle pause (not a failure backoff) with a probe. */
  synchronized void wake(long now) {
    wakes++;
    if (!failing) {
      pausedUntil = now;
      probeDue = true;
    }
    notifyAll();
  }

  /** No turn starts until {@link #resume}. */
  synchronized void pause() {
    paused = true;
    notifyAll();
  }

  /** Turns start again, with a probe at once. */
  synchronized void resume(long now) {
    paused = false;
    pausedUntil = now;
    probeDue = true;
    notifyAll();
  }

  /** True between {@link #pause()} and {@link #resume}. */
  boolean paused() {
    return paused;
  }

  /** No turn starts any more; {@link #take()} and {@link #sleepUntil} return. */
  synchronized void stop() {
    stopped = true;
    notifyAll();
  }

  /** True once {@link #stop()} was called. */
  boolean stopped() {
    return stopped;
  }

  /** Sleeps until {@code until} (a nanoTime), or until stopped or interrupted. */
  synchronized void sleepUntil(long until) {
    while (!stopped) {
      long left = until - System.nanoTime();
      if (left <= 0) {
        return;
      }
      try {
        TimeUnit.NANOSECONDS.timedWait(this, left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** The later of two {@link System#nanoTime()} values (which may be negative and wrap). */
  private static long later(long a, long b) {
    return a - b >= 0 ? a : b;
  }
}
