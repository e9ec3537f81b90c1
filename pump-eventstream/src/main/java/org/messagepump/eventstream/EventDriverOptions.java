package org.messagepump.eventstream;

import java.time.Duration;

/**
 * How an {@link EventDriver} runs its handler: concurrency, where a new handler key starts, and how
 * acquisition waits and how far it looks. Immutable; each {@code with…} method returns a copy and
 * rejects a bad value at once with an {@link IllegalArgumentException} naming the option.
 *
 * <pre>{@code
 * EventDriver driver = store.driver("orders-projection", handlers,
 *     EventDriverOptions.defaults()
 *         .withConcurrency(Concurrency.MINIMAL)
 *         .withStartAt(StartPosition.END));
 * }</pre>
 *
 * @param concurrency {@link Concurrency#MINIMAL} (one delivery at a time, cluster-wide) or {@link
 *     Concurrency#MAXIMAL} (streams in parallel, the default)
 * @param startAt where the handler starts when its key has never run: {@link
 *     StartPosition#BEGINNING} (the default, every past event) or {@link StartPosition#END} (only
 *     events appended after its first poll); ignored once the key has run ({@link
 *     EventOperations#reset} replays from 0)
 * @param handlerLockWait how long acquisition waits for the handler lock under {@link
 *     Concurrency#MINIMAL}; positive
 * @param heldStreamWait how long an acquisition that finds every stream with a backlog held waits
 *     for one (zero: do not wait, let the pump idle for its poll interval); not negative
 * @param streamsPerPoll how many streams one acquisition may look at (and advance) before it gives
 *     up for this poll; at least 1
 */
public record EventDriverOptions(
    Concurrency concurrency,
    StartPosition startAt,
    Duration handlerLockWait,
    Duration heldStreamWait,
    int streamsPerPoll) {

  /** Default concurrency: streams in parallel. */
  public static final Concurrency DEFAULT_CONCURRENCY = Concurrency.MAXIMAL;

  /** Default start position of a handler key that has never run: the beginning of every stream. */
  public static final StartPosition DEFAULT_START_POSITION = StartPosition.BEGINNING;

  /** Default time acquisition waits for the handler lock under {@link Concurrency#MINIMAL}. */
  public static final Duration DEFAULT_HANDLER_LOCK_WAIT = Duration.ofSeconds(1);

  /**
   * Default time an acquisition that found every stream with a backlog held waits for one of them
   * (typically the handler's own delivery about to commit) before the pump idles.
   */
  public static final Duration DEFAULT_HELD_STREAM_WAIT = Duration.ofMillis(500);

  /** Default number of streams one acquisition may look at before it gives up for this poll. */
  public static final int DEFAULT_STREAMS_PER_POLL = 64;

  private static final EventDriverOptions DEFAULTS =
      new EventDriverOptions(
          DEFAULT_CONCURRENCY,
          DEFAULT_START_POSITION,
          DEFAULT_HANDLER_LOCK_WAIT,
          DEFAULT_HELD_STREAM_WAIT,
          DEFAULT_STREAMS_PER_POLL);

  /**
   * Checks every option.
   *
   * @throws IllegalArgumentException naming the first option that is null or out of range
   */
  public EventDriverOptions {
    if (concurrency == null) {
      throw new IllegalArgumentException("concurrency must not be null");
    }
    if (startAt == null) {
      throw new IllegalArgumentException("startAt must not be null");
    }
    if (handlerLockWait == null || handlerLockWait.isNegative() || handlerLockWait.isZero()) {
      throw new IllegalArgumentException("handlerLockWait must be positive: " + handlerLockWait);
    }
    if (heldStreamWait == null || heldStreamWait.isNegative()) {
      throw new IllegalArgumentException("heldStreamWait must not be negative: " + heldStreamWait);
    }
    if (streamsPerPoll < 1) {
      throw new IllegalArgumentException("streamsPerPoll must be >= 1: " + streamsPerPoll);
    }
  }

  /** Every option at its default. */
  public static EventDriverOptions defaults() {
    return DEFAULTS;
  }

  /** A copy with {@code concurrency}; not null. */
  public EventDriverOptions withConcurrency(Concurrency concurrency) {
    return new EventDriverOptions(
        concurrency, startAt, handlerLockWait, heldStreamWait, streamsPerPoll);
  }

  /** A copy starting a never-run handler key at {@code startAt}; not null. */
  public EventDriverOptions withStartAt(StartPosition startAt) {
    return new EventDriverOptions(
        concurrency, startAt, handlerLockWait, heldStreamWait, streamsPerPoll);
  }

  /** A copy with {@code handlerLockWait}; positive. */
  public EventDriverOptions withHandlerLockWait(Duration handlerLockWait) {
    return new EventDriverOptions(
        concurrency, startAt, handlerLockWait, heldStreamWait, streamsPerPoll);
  }

  /** A copy with {@code heldStreamWait}; zero or more. */
  public EventDriverOptions withHeldStreamWait(Duration heldStreamWait) {
    return new EventDriverOptions(
        concurrency, startAt, handlerLockWait, heldStreamWait, streamsPerPoll);
  }

  /** A copy with {@code streamsPerPoll}; at least 1. */
  public EventDriverOptions withStreamsPerPoll(int streamsPerPoll) {
    return new EventDriverOptions(
        concurrency, startAt, handlerLockWait, heldStreamWait, streamsPerPoll);
  }
}
