package org.messagepump.core;

import java.time.Duration;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Capped exponential backoff with equal jitter: {@code delay = base + random(0, min(cap,
 * base·2^failures) − base)}. Overflow-safe for any failure count.
 *
 * <p>Written here rather than taken from Resilience4j's {@code IntervalFunction}: its randomized
 * exponential backoff spreads around the interval ({@code ± factor}) instead of the equal-jitter
 * formula docs/design.md states, and the pump's retries are not an in-process retry loop but a
 * postponement stored in the database.
 */
public final class Backoff {

  private final long baseNanos;
  private final long capNanos;

  /** A backoff from {@code base} growing to at most {@code cap}; both positive, cap ≥ base. */
  public Backoff(Duration base, Duration cap) {
    Objects.requireNonNull(base, "backoffBase");
    Objects.requireNonNull(cap, "backoffCap");
    if (base.isNegative() || base.isZero()) {
      throw new IllegalArgumentException("backoffBase must be positive: " + base);
    }
    if (cap.compareTo(base) < 0) {
      throw new IllegalArgumentException(
          "backoffCap (" + cap + ") must be >= backoffBase (" + base + ")");
    }
    this.baseNanos = saturatedNanos(base);
    this.capNanos = saturatedNanos(cap);
  }

  /** The base delay. */
  public Duration base() {
    return Duration.ofNanos(baseNanos);
  }

  /** The cap. */
  public Duration cap() {
    return Duration.ofNanos(capNanos);
  }

  /** The upper bound {@code min(cap, base·2^failures)} for a failure count (never overflows). */
  public Duration ceiling(int failures) {
    return Duration.ofNanos(ceilingNanos(failures));
  }

  /** A jittered delay for the given failure count: uniform in {@code [base, ceiling(failures)]}. */
  public Duration delay(int failures, RandomGenerator random) {
    long ceiling = ceilingNanos(failures);
    long spread = ceiling - baseNanos;
    long jitter = spread <= 0 ? 0 : random.nextLong(spread == Long.MAX_VALUE ? spread : spread + 1);
    return Duration.ofNanos(baseNanos + jitter);
  }

  private long ceilingNanos(int failures) {
    if (failures <= 0) {
      return Math.min(capNanos, baseNanos);
    }
    // base·2^failures overflows when failures >= numberOfLeadingZeros(base); the cap wins then.
    if (failures >= Long.numberOfLeadingZeros(baseNanos)) {
      return capNanos;
    }
    return Math.min(capNanos, baseNanos << failures);
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }
}
