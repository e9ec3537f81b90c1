package org.messagepump.commands;

import java.time.Duration;
import java.util.concurrent.ThreadFactory;
import java.util.regex.Pattern;
import org.messagepump.commands.internal.JobThread;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires the due ticks of a queue's {@link Schedules}: one thread that checks, enqueues a command
 * per due tick (see {@link Schedules#fireDue()}) and sleeps. Run one next to each command pump, or
 * in any number of processes: each tick is enqueued exactly once whatever the number of schedulers.
 *
 * <p>It never checks more often than its {@code pollInterval} (give it the pump's). After a check
 * it sleeps until the soonest next tick, at least {@code pollInterval}; and a check that fired
 * nothing doubles the longest sleep, up to {@code maxIdle}, so that schedules defined, resumed or
 * changed by other processes are seen within {@code maxIdle}. Definitions and resumes made through
 * the same {@link CommandQueue} wake it at once (still at most one check per {@code pollInterval}).
 * A failed check (database unreachable) backs off the same way and is logged once per streak.
 *
 * <pre>{@code
 * try (CommandScheduler scheduler = CommandScheduler.builder(queue)
 *     .pollInterval(Duration.ofSeconds(1))
 *     .build()) {
 *   scheduler.start();
 *   ...
 * }
 * }</pre>
 */
public final class CommandScheduler implements AutoCloseable {

  /** Default shortest time between two checks: 1 second, as a pump's default poll interval. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

  /** Default longest sleep between checks while nothing fires: 30 seconds. */
  public static final Duration DEFAULT_MAX_IDLE = Duration.ofSeconds(30);

  private static final Logger log = LoggerFactory.getLogger(CommandScheduler.class);
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  private final String name;
  private final Schedules schedules;
  private final long pollNanos;
  private final long maxIdleNanos;
  private final ThreadFactory threadFactory;
  private final Runnable wakeUp = this::wake;
  private final JobThread thread;
  private volatile long checks;
  private long ceiling;
  private boolean failing;

  private CommandScheduler(Builder b) {
    this.name = b.name;
    this.schedules = b.queue.operations().schedules();
    this.pollNanos = b.pollInterval.toNanos();
    this.maxIdleNanos = Math.max(b.maxIdle.toNanos(), pollNanos);
    this.threadFactory = b.threadFactory;
    this.thread = new JobThread("scheduler", "scheduler-" + name, threadFactory);
    this.ceiling = pollNanos;
  }

  /** A builder for a scheduler of {@code queue}'s schedules. */
  public static Builder builder(CommandQueue queue) {
    if (queue == null) {
      throw new IllegalArgumentException("queue must not be null");
    }
    return new Builder(queue);
  }

  /** Starts the scheduler's thread. A scheduler starts once. */
  public void start() {
    thread.start(this::check);
    schedules.addWakeUp(wakeUp);
  }

  /** True between {@link #start()} and {@link #close()}. */
  public boolean isRunning() {
    return thread.isRunning();
  }

  /** Checks again as soon as its {@code pollInterval} allows. */
  public void wake() {
    thread.wake();
  }

  /** The number of checks made so far. */
  public long checks() {
    return checks;
  }

  /** Stops the thread, letting a running check finish (it is one short transaction). */
  @Override
  public void close() {
    schedules.removeWakeUp(wakeUp);
    thread.close();
  }

  /**
   * One check, then the next one's times: at the next tick, or sooner after a check that fired or
   * found a full page; the idle ceiling doubles up to {@code maxIdle} while nothing fires, and a
   * failed check backs off the same way, logged once per streak.
   */
  private long[] check() {
    long began = System.nanoTime();
    long sleep;
    try {
      Schedules.Check c = schedules.check();
      checks++;
      if (failing) {
        log.info("scheduler {}: checks work again", name);
        failing = false;
      }
      ceiling = c.fired() > 0 || c.full() ? pollNanos : Math.min(ceiling * 2, maxIdleNanos);
      long until =
          c.untilSoonest() == null ? Long.MAX_VALUE : Math.max(0, saturatedNanos(c.untilSoonest()));
      sleep = c.full() ? pollNanos : Math.max(pollNanos, Math.min(until, ceiling));
    } catch (RuntimeException e) {
      checks++;
      if (!failing) {
        log.warn("scheduler {}: a check failed; backing off: {}", name, e.toString());
        failing = true;
      } else {
        log.debug("scheduler {}: a check failed again: {}", name, e.toString());
      }
      ceiling = Math.min(ceiling * 2, maxIdleNanos);
      sleep = ceiling;
    }
    return new long[] {began + pollNanos, began + sleep};
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return d.isNegative() ? 0 : Long.MAX_VALUE;
    }
  }

  /**
   * Builds a {@link CommandScheduler}; setters refuse bad values with {@link
   * IllegalArgumentException}.
   */
  public static final class Builder {
    private final CommandQueue queue;
    private String name = "commands";
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private Duration maxIdle = DEFAULT_MAX_IDLE;
    private ThreadFactory threadFactory = Thread::new;

    private Builder(CommandQueue queue) {
      this.queue = queue;
    }

    /** The name in the thread's name and in log lines: {@code [A-Za-z0-9_.-]{1,64}}. */
    public Builder name(String name) {
      if (name == null || !NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("name must match " + NAME.pattern() + ": " + name);
      }
      this.name = name;
      return this;
    }

    /**
     * The shortest time between two checks (default {@link #DEFAULT_POLL_INTERVAL}, a pump's
     * default poll interval too); positive. A tick fires at most about this late.
     */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = positive("pollInterval", pollInterval);
      return this;
    }

    /**
     * The longest sleep between checks while nothing fires (default {@link #DEFAULT_MAX_IDLE});
     * positive, and taken as at least {@code pollInterval}.
     */
    public Builder maxIdle(Duration maxIdle) {
      this.maxIdle = positive("maxIdle", maxIdle);
      return this;
    }

    /** Makes the scheduler's thread (default {@code Thread::new}). */
    public Builder threadFactory(ThreadFactory threadFactory) {
      if (threadFactory == null) {
        throw new IllegalArgumentException("threadFactory must not be null");
      }
      this.threadFactory = threadFactory;
      return this;
    }

    /** The scheduler, not started. */
    public CommandScheduler build() {
      return new CommandScheduler(this);
    }

    private static Duration positive(String what, Duration d) {
      if (d == null) {
        throw new IllegalArgumentException(what + " must not be null");
      }
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(what + " must be positive: " + d);
      }
      if (d.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException(what + " must be at most one day: " + d);
      }
      return d;
    }
  }
}
