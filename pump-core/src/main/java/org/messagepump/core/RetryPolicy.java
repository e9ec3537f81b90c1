package org.messagepump.core;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.random.RandomGenerator;
import org.messagepump.core.engine.MessagePump;

/**
 * How the pump retries a delivery whose handler failed: how many attempts it gets before it is
 * parked (the driver's dead letter), how long it waits between them, and which failures are not
 * worth retrying at all. A pump has one policy for every message type ({@link
 * MessagePump.Builder#retryPolicy(RetryPolicy)}) and may override it for single types ({@link
 * MessagePump.Builder#retryPolicy(String, RetryPolicy)}).
 *
 * <pre>{@code
 * RetryPolicy payments = RetryPolicy.defaults()
 *     .withMaxAttempts(5)
 *     .withExponentialBackoff(Duration.ofSeconds(1), Duration.ofMinutes(1))
 *     .withNonRetryable(CardDeclinedException.class);
 * RetryPolicy emails = RetryPolicy.retryForever().withFixedDelay(Duration.ofSeconds(30));
 * }</pre>
 *
 * <p>Attempts count failures only: a Busy outcome postpones the delivery by the policy's base delay
 * (or the retry-after it asked for, bounded by the base and the cap) without counting. With {@code
 * maxAttempts} 5 the fifth failed attempt parks the delivery. A failure that is an instance of one
 * of the {@link #nonRetryable()} classes parks the delivery at once, counted as a failure, with its
 * error stored as the parked delivery's reason like any other.
 *
 * <p>The {@linkplain #defaults() default policy} gives {@value #DEFAULT_MAX_ATTEMPTS} attempts with
 * capped exponential backoff from {@code 250 ms} to {@code 5 min}: the 24 waits between them take
 * about 39 minutes on average (at least 6 s, at most 78.5 min) before the 25th failure parks the
 * delivery. {@link #retryForever()} never parks.
 *
 * <p>Immutable and thread-safe; the {@code with} methods return a changed copy. Invalid values are
 * rejected with an {@link IllegalArgumentException} naming the option.
 */
public final class RetryPolicy {

  /** {@link #maxAttempts()} of a policy that never parks: {@link Integer#MAX_VALUE}. */
  public static final int UNLIMITED_ATTEMPTS = Integer.MAX_VALUE;

  /** Attempts of the {@linkplain #defaults() default policy}: 25. */
  public static final int DEFAULT_MAX_ATTEMPTS = 25;

  /** Base delay of the {@linkplain #defaults() default policy}: 250 ms. */
  public static final Duration DEFAULT_BACKOFF_BASE = Duration.ofMillis(250);

  /** Cap of the {@linkplain #defaults() default policy}: 5 minutes. */
  public static final Duration DEFAULT_BACKOFF_CAP = Duration.ofMinutes(5);

  private static final RetryPolicy DEFAULTS =
      new RetryPolicy(
          DEFAULT_MAX_ATTEMPTS, new Backoff(DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_CAP), Set.of());

  private static final RetryPolicy FOREVER =
      new RetryPolicy(UNLIMITED_ATTEMPTS, DEFAULTS.backoff, Set.of());

  private final int maxAttempts;
  private final Backoff backoff;
  private final Set<Class<? extends Throwable>> nonRetryable;

  private RetryPolicy(
      int maxAttempts, Backoff backoff, Set<Class<? extends Throwable>> nonRetryable) {
    this.maxAttempts = maxAttempts;
    this.backoff = backoff;
    this.nonRetryable = nonRetryable;
  }

  /**
   * {@value #DEFAULT_MAX_ATTEMPTS} attempts, capped exponential backoff with equal jitter from
   * {@link #DEFAULT_BACKOFF_BASE} to {@link #DEFAULT_BACKOFF_CAP}, every failure retryable.
   */
  public static RetryPolicy defaults() {
    return DEFAULTS;
  }

  /**
   * Never parks: a failing delivery is retried until it is handled (or an operator removes it),
   * with the default backoff. Only a {@linkplain #withNonRetryable non-retryable} failure, when
   * some are named, parks it.
   */
  public static RetryPolicy retryForever() {
    return FOREVER;
  }

  /**
   * This policy with another attempt limit: the {@code maxAttempts}-th failed attempt parks the
   * delivery. At least 1; {@link #UNLIMITED_ATTEMPTS} never parks.
   */
  public RetryPolicy withMaxAttempts(int maxAttempts) {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1: " + maxAttempts);
    }
    return new RetryPolicy(maxAttempts, backoff, nonRetryable);
  }

  /**
   * This policy with capped exponential backoff and equal jitter: after the n-th failure the
   * delivery waits a random time between {@code base} and {@code min(cap, base·2^n)}. {@code base}
   * is also the Busy delay. Both positive and at most {@link Limits#MAX_DELAY}; {@code cap ≥ base}.
   */
  public RetryPolicy withExponentialBackoff(Duration base, Duration cap) {
    delay("backoffBase", base);
    delay("backoffCap", cap);
    if (cap.compareTo(base) < 0) {
      throw new IllegalArgumentException(
          "backoffCap (" + cap + ") must be >= backoffBase (" + base + ")");
    }
    return new RetryPolicy(maxAttempts, new Backoff(base, cap), nonRetryable);
  }

  /**
   * This policy with the same wait after every failure, no jitter; also the Busy delay. Positive,
   * at most {@link Limits#MAX_DELAY}.
   */
  public RetryPolicy withFixedDelay(Duration delay) {
    delay("fixedDelay", delay);
    return new RetryPolicy(maxAttempts, new Backoff(delay, delay), nonRetryable);
  }

  /**
   * This policy with the failures not worth retrying, replacing any named before: a handler failure
   * that is an instance of one of {@code types} (subclasses included; the thrown exception itself,
   * not its causes) parks the delivery at once. None by default.
   */
  @SafeVarargs
  public final RetryPolicy withNonRetryable(Class<? extends Throwable>... types) {
    if (types == null) {
      throw new IllegalArgumentException("nonRetryable must not be null");
    }
    return withNonRetryable(Arrays.asList(types));
  }

  /** As {@link #withNonRetryable(Class[])}, from a collection. */
  public RetryPolicy withNonRetryable(java.util.Collection<Class<? extends Throwable>> types) {
    if (types == null) {
      throw new IllegalArgumentException("nonRetryable must not be null");
    }
    Set<Class<? extends Throwable>> set = new LinkedHashSet<>();
    for (Class<? extends Throwable> t : types) {
      if (t == null) {
        throw new IllegalArgumentException("nonRetryable must not contain null");
      }
      if (!Throwable.class.isAssignableFrom(t)) {
        // Only reachable through raw types (a configuration binder, say).
        throw new IllegalArgumentException("nonRetryable must name Throwable classes: " + t);
      }
      set.add(t);
    }
    return new RetryPolicy(maxAttempts, backoff, java.util.Collections.unmodifiableSet(set));
  }

  /** The failed attempt that parks a delivery; {@link #UNLIMITED_ATTEMPTS} for never. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** True when this policy never parks for the number of attempts. */
  public boolean retriesForever() {
    return maxAttempts == UNLIMITED_ATTEMPTS;
  }

  /** The base delay: the Busy delay, the first wait after a failure. */
  public Duration backoffBase() {
    return backoff.base();
  }

  /** The longest wait after a failure; equal to the base for a fixed delay. */
  public Duration backoffCap() {
    return backoff.cap();
  }

  /** True when every wait is the same ({@link #withFixedDelay(Duration)}). */
  public boolean isFixedDelay() {
    return backoffBase().equals(backoffCap());
  }

  /** The failure classes that park a delivery at once (unmodifiable; empty by default). */
  public Set<Class<? extends Throwable>> nonRetryable() {
    return nonRetryable;
  }

  /** True when {@code failure} is an instance of one of the {@link #nonRetryable()} classes. */
  public boolean isNonRetryable(Throwable failure) {
    if (failure == null) {
      return false;
    }
    for (Class<? extends Throwable> t : nonRetryable) {
      if (t.isInstance(failure)) {
        return true;
      }
    }
    return false;
  }

  /**
   * True when a delivery that has now failed {@code failures} times, the last time with {@code
   * failure}, is parked rather than retried.
   */
  public boolean parks(int failures, Throwable failure) {
    return failures >= maxAttempts || isNonRetryable(failure);
  }

  /** The wait after the {@code failures}-th failure, drawn with {@code random}. */
  public Duration delay(int failures, RandomGenerator random) {
    return backoff.delay(failures, random);
  }

  /**
   * The backoff curve this policy draws its waits from (the pump also uses it for its own
   * postponements, such as a Busy answer's delay).
   */
  public Backoff backoff() {
    return backoff;
  }

  private static void delay(String option, Duration d) {
    if (d == null) {
      throw new IllegalArgumentException(option + " must not be null");
    }
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(option + " must be positive: " + d);
    }
    if (d.compareTo(Limits.MAX_DELAY) > 0) {
      throw new IllegalArgumentException(
          option + " must be at most " + Limits.MAX_DELAY.toDays() + " days: " + d);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RetryPolicy p
        && p.maxAttempts == maxAttempts
        && p.backoffBase().equals(backoffBase())
        && p.backoffCap().equals(backoffCap())
        && p.nonRetryable.equals(nonRetryable);
  }

  @Override
  public int hashCode() {
    return Objects.hash(maxAttempts, backoffBase(), backoffCap(), nonRetryable);
  }

  @Override
  public String toString() {
    return "RetryPolicy["
        + (retriesForever() ? "forever" : "maxAttempts=" + maxAttempts)
        + (isFixedDelay()
            ? ", fixedDelay=" + backoffBase()
            : ", backoff=" + backoffBase() + ".." + backoffCap())
        + (nonRetryable.isEmpty()
            ? ""
            : ", nonRetryable=" + nonRetryable.stream().map(Class::getName).sorted().toList())
        + "]";
  }
}
