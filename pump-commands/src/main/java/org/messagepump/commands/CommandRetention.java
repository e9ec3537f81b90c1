package org.messagepump.commands;

import java.time.Duration;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.JobThread;
import org.messagepump.commands.internal.RetentionQueries;
import org.messagepump.core.Limits;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Transactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes what a queue no longer needs: idempotency keys whose period has expired, dead letters
 * parked longer ago than {@code deadLetterAge}, and history rows older than {@code historyAge}.
 * Each batch of at most {@code batchSize} rows is one short transaction that locks its rows with
 * {@code SKIP LOCKED}, so enqueues, handling and dead-letter operations never wait for more than
 * one batch; full batches are separated by {@code batchPause}.
 *
 * <p>Run it as a thread ({@link #start()}: a pass every {@code interval}, a failed pass backing off
 * and logged once per streak), or call {@link #purge()} from a cron job or {@code pump dead-letters
 * purge}. Any number of processes may run it at once. Without a {@code deadLetterAge} dead letters
 * are kept; without a {@code historyAge} the history is kept.
 *
 * <pre>{@code
 * try (CommandRetention retention = CommandRetention.builder(queue.operations())
 *     .deadLetterAge(Duration.ofDays(30))
 *     .historyAge(Duration.ofDays(7))
 *     .build()) {
 *   retention.start();
 *   ...
 * }
 * }</pre>
 */
public final class CommandRetention implements AutoCloseable {

  /** Default rows per batch. */
  public static final int DEFAULT_BATCH_SIZE = 1000;

  /** Largest {@code batchSize}. */
  public static final int MAX_BATCH_SIZE = 10_000;

  /** Default time between passes of the thread. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(5);

  /** Default pause between two full batches. */
  public static final Duration DEFAULT_BATCH_PAUSE = Duration.ofMillis(50);

  private static final Logger log = LoggerFactory.getLogger(CommandRetention.class);
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  /**
   * What one {@link #purge()} deleted.
   *
   * @param keys expired idempotency keys
   * @param deadLetters dead letters older than {@code deadLetterAge}
   * @param history history rows older than {@code historyAge}
   */
  public record Purged(long keys, long deadLetters, long history) {

    /** Everything deleted. */
    public long total() {
      return keys + deadLetters + history;
    }
  }

  private final String name;
  private final DataSource dataSource;
  private final CommandTables tables;
  private final Duration deadLetterAge;
  private final Duration historyAge;
  private final int batchSize;
  private final long intervalNanos;
  private final long batchPauseNanos;
  private final ThreadFactory threadFactory;
  private final Meters.Counter purgedKeys;
  private final Meters.Counter purgedDeadLetters;
  private final Meters.Counter purgedHistory;
  private final JobThread thread;
  private long failureSleep;
  private boolean failing;
  private volatile long passes;

  private CommandRetention(Builder b) {
    this.name = b.name;
    this.dataSource = b.operations.dataSource();
    this.tables = b.operations.tables();
    this.deadLetterAge = b.deadLetterAge;
    this.historyAge = b.historyAge;
    this.batchSize = b.batchSize;
    this.intervalNanos = b.interval.toNanos();
    this.batchPauseNanos = b.batchPause.toNanos();
    this.threadFactory = b.threadFactory;
    this.thread = new JobThread("retention", "retention-" + name, threadFactory);
    this.failureSleep = firstBackoff();
    this.purgedKeys = counter(b.operations, "keys");
    this.purgedDeadLetters = counter(b.operations, "dead_letters");
    this.purgedHistory = counter(b.operations, "history");
  }

  private static Meters.Counter counter(CommandOperations operations, String what) {
    return operations
        .meters()
        .counter("messagepump.commands.purged", "Rows deleted by the retention job", "what", what);
  }

  /**
   * A builder for the retention of the queue {@code operations} works on. Its {@code
   * messagepump.commands.purged} meters register where the operator's queue registers its meters
   * ({@link CommandQueue#operations()}); an operator of {@link CommandOperations#of(DataSource)}
   * has none.
   */
  public static Builder builder(CommandOperations operations) {
    if (operations == null) {
      throw new IllegalArgumentException("operations must not be null");
    }
    return new Builder(operations);
  }

  /**
   * One pass: deletes every expired key, and the dead letters and history past their ages, in
   * batches, until a batch finds fewer than {@code batchSize} rows; returns the counts.
   */
  public Purged purge() {
    return purge(() -> false);
  }

  private Purged purge(BooleanSupplier stop) {
    long keys =
        drain(stop, "expired keys", tx -> RetentionQueries.purgeExpiredKeys(tx, tables, batchSize));
    purgedKeys.increment(keys);
    long dead = 0;
    if (deadLetterAge != null) {
      dead =
          drain(
              stop,
              "old dead letters",
              tx -> RetentionQueries.purgeDeadLetters(tx, tables, deadLetterAge, batchSize));
      purgedDeadLetters.increment(dead);
    }
    long history = 0;
    if (historyAge != null) {
      history =
          drain(
              stop,
              "old history",
              tx -> RetentionQueries.purgeHistory(tx, tables, historyAge, batchSize));
      purgedHistory.increment(history);
    }
    passes++;
    return new Purged(keys, dead, history);
  }

  private interface Batch {
    int run(org.jooq.DSLContext dsl);
  }

  private long drain(BooleanSupplier stop, String what, Batch batch) {
    long total = 0;
    while (!stop.getAsBoolean()) {
      int n = Transactions.inNew(dataSource, "deleting " + what, tx -> batch.run(tx.dsl()));
      total += n;
      if (n < batchSize) {
        break;
      }
      if (!thread.pause(batchPauseNanos)) {
        break;
      }
    }
    return total;
  }

  /** Starts the thread: a pass now, then one every {@code interval}. Starts once. */
  public void start() {
    thread.start(this::pass);
  }

  /** True between {@link #start()} and {@link #close()}. */
  public boolean isRunning() {
    return thread.isRunning();
  }

  /** The number of passes completed so far (by the thread or {@link #purge()}). */
  public long passes() {
    return passes;
  }

  /** Stops the thread, letting a running batch finish (it is one short transaction). */
  @Override
  public void close() {
    thread.close();
  }

  /**
   * One pass of the thread, then the next one's time: after {@code interval}, or after a failure
   * sooner, backing off from one second to {@code interval}, logged once per streak.
   */
  private long[] pass() {
    long sleep;
    try {
      Purged p = purge(thread::isClosed);
      if (failing) {
        log.info("retention {}: passes work again", name);
        failing = false;
      }
      if (p.total() > 0) {
        log.info(
            "retention {}: deleted {} expired keys, {} dead letters, {} history rows",
            name,
            p.keys(),
            p.deadLetters(),
            p.history());
      }
      failureSleep = firstBackoff();
      sleep = intervalNanos;
    } catch (RuntimeException e) {
      if (!failing) {
        log.warn("retention {}: a pass failed; backing off: {}", name, e.toString());
        failing = true;
      } else {
        log.debug("retention {}: a pass failed again: {}", name, e.toString());
      }
      sleep = failureSleep;
      failureSleep = Math.min(failureSleep * 2, intervalNanos);
    }
    long next = System.nanoTime() + sleep;
    return new long[] {next, next};
  }

  private long firstBackoff() {
    return Math.min(TimeUnit.SECONDS.toNanos(1), intervalNanos);
  }

  /**
   * Builds a {@link CommandRetention}; setters refuse bad values with an {@link
   * IllegalArgumentException} naming the option.
   */
  public static final class Builder {
    private final CommandOperations operations;
    private String name = "commands";
    private Duration deadLetterAge;
    private Duration historyAge;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Duration interval = DEFAULT_INTERVAL;
    private Duration batchPause = DEFAULT_BATCH_PAUSE;
    private ThreadFactory threadFactory = Thread::new;

    private Builder(CommandOperations operations) {
      this.operations = operations;
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
     * Deletes dead letters parked longer ago than {@code age} (database clock); positive, at most
     * {@link Limits#MAX_DELAY}. Default: dead letters are kept until retried or discarded.
     */
    public Builder deadLetterAge(Duration age) {
      this.deadLetterAge = age("deadLetterAge", age);
      return this;
    }

    /**
     * Deletes history rows written longer ago than {@code age} (database clock); positive, at most
     * {@link Limits#MAX_DELAY}. Default: the history is kept.
     */
    public Builder historyAge(Duration age) {
      this.historyAge = age("historyAge", age);
      return this;
    }

    /**
     * Rows deleted per transaction, 1 to {@value #MAX_BATCH_SIZE}; default {@value
     * #DEFAULT_BATCH_SIZE}.
     */
    public Builder batchSize(int batchSize) {
      if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
        throw new IllegalArgumentException(
            "batchSize must be between 1 and " + MAX_BATCH_SIZE + ": " + batchSize);
      }
      this.batchSize = batchSize;
      return this;
    }

    /** Time between the thread's passes; positive, at most one day. Default 5 minutes. */
    public Builder interval(Duration interval) {
      if (interval == null) {
        throw new IllegalArgumentException("interval must not be null");
      }
      if (interval.isNegative()
          || interval.isZero()
          || interval.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException(
            "interval must be positive and at most one day: " + interval);
      }
      this.interval = interval;
      return this;
    }

    /**
     * Pause between two full batches, leaving the database to other work; 0 to 1 minute. Default 50
     * ms.
     */
    public Builder batchPause(Duration batchPause) {
      if (batchPause == null) {
        throw new IllegalArgumentException("batchPause must not be null");
      }
      if (batchPause.isNegative() || batchPause.compareTo(Duration.ofMinutes(1)) > 0) {
        throw new IllegalArgumentException(
            "batchPause must be between 0 and 1 minute: " + batchPause);
      }
      this.batchPause = batchPause;
      return this;
    }

    /** Makes the thread (default {@code Thread::new}). */
    public Builder threadFactory(ThreadFactory threadFactory) {
      if (threadFactory == null) {
        throw new IllegalArgumentException("threadFactory must not be null");
      }
      this.threadFactory = threadFactory;
      return this;
    }

    /** The retention, not started. */
    public CommandRetention build() {
      return new CommandRetention(this);
    }

    private static Duration age(String option, Duration age) {
      if (age == null) {
        throw new IllegalArgumentException(option + " must not be null");
      }
      if (age.isNegative() || age.isZero()) {
        throw new IllegalArgumentException(option + " must be positive: " + age);
      }
      if (age.compareTo(Limits.MAX_DELAY) > 0) {
        throw new IllegalArgumentException(
            option + " must be at most " + Limits.MAX_DELAY.toDays() + " days: " + age);
      }
      return age;
    }
  }
}
