package org.messagepump.commands.internal;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * The daemon thread of a background job (the scheduler, the retention job): started once, running
 * passes until closed, sleeping between them; a {@link #wake()} ends a sleep early, but never
 * before the earliest time the pass asked for. {@link #close()} lets a running pass finish (it
 * checks {@link #isClosed()} between its short transactions) and waits up to 10 seconds for it.
 */
public final class JobThread {

  /** One pass of the job. */
  public interface Pass {
    /**
     * Runs once; returns when to run again as {@link System#nanoTime()} instants: not before {@code
     * next[0]} even when woken, at {@code next[1]} otherwise.
     */
    long[] run();
  }

  private final String what;
  private final String threadName;
  private final ThreadFactory threadFactory;
  private final Object lock = new Object();
  private boolean woken;
  private boolean started;
  private boolean closed;
  private Thread thread;

  /**
   * A thread named {@code threadName} made by {@code threadFactory}; {@code what} names the job in
   * the exceptions of a wrong start ("scheduler", "retention").
   */
  public JobThread(String what, String threadName, ThreadFactory threadFactory) {
    this.what = what;
    this.threadName = threadName;
    this.threadFactory = threadFactory;
  }

  /** Starts the thread running {@code pass} until closed. A job starts once. */
  public void start(Pass pass) {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException(threadName + ": " + what + " is closed");
      }
      if (started) {
        throw new IllegalStateException(threadName + ": " + what + " is already started");
      }
      started = true;
      thread =
          threadFactory.newThread(
              () -> {
                while (!isClosed()) {
                  long[] next = pass.run();
                  sleepUntil(next[0], next[1]);
                }
              });
      thread.setName(threadName);
      thread.setDaemon(true);
      thread.start();
    }
  }

  /** True between {@link #start} and {@link #close()}. */
  public boolean isRunning() {
    synchronized (lock) {
      return started && !closed;
    }
  }

  /** True once {@link #close()} was called (or the thread was interrupted). */
  public boolean isClosed() {
    synchronized (lock) {
      return closed;
    }
  }

  /** Ends the current sleep as soon as its earliest time has passed. */
  public void wake() {
    synchronized (lock) {
      woken = true;
      lock.notifyAll();
    }
  }

  /**
   * Sleeps {@code nanos} unless closed first (a wake-up does not shorten it); false when closed.
   */
  public boolean pause(long nanos) {
    long deadline = System.nanoTime() + nanos;
    synchronized (lock) {
      while (!closed) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return true;
        }
        if (!await(left)) {
          return false;
        }
      }
      return false;
    }
  }

  /**
   * Sleeps until {@code latest}, or until a wake-up once {@code earliest} has passed (a wake-up
   * never makes passes more frequent than the job allows).
   */
  private void sleepUntil(long earliest, long latest) {
    synchronized (lock) {
      while (!closed) {
        long deadline = woken ? earliest : latest;
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          woken = false; // consumed: the pass about to run sees what the wake-up announced
          return;
        }
        if (!await(left)) {
          return;
        }
      }
    }
  }

  /** Waits on the lock (held); false, and closed, when interrupted. */
  private boolean await(long nanos) {
    try {
      TimeUnit.NANOSECONDS.timedWait(lock, nanos);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closed = true;
      return false;
    }
  }

  /** Stops the thread, letting a running pass finish; waits up to 10 seconds for it. */
  public void close() {
    Thread t;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      lock.notifyAll();
      t = thread;
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(TimeUnit.SECONDS.toMillis(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
