package org.messagepump.core;

import java.time.Duration;

/** Checks and bounds a Busy outcome's retry-after (one rule for every driver). */
public final class RetryAfter {

  private RetryAfter() {}

  /**
   * Rejects a negative retry-after with an {@link IllegalArgumentException}; {@code null} (the
   * backoff base) passes.
   */
  public static Duration check(Duration retryAfter) {
    if (retryAfter != null && retryAfter.isNegative()) {
      throw new IllegalArgumentException("retryAfter must not be negative: " + retryAfter);
    }
    return retryAfter;
  }

  /**
   * The postponement of a Busy delivery: the backoff base when no retry-after was given, else the
   * retry-after bounded below by the base (a zero retry-after must not make the delivery come round
   * hot) and above by the backoff cap (itself at most {@link Limits#MAX_DELAY}).
   */
  public static Duration delay(Duration retryAfter, Backoff backoff) {
    if (retryAfter == null || retryAfter.compareTo(backoff.base()) <= 0) {
      return backoff.base();
    }
    return retryAfter.compareTo(backoff.cap()) >= 0 ? backoff.cap() : retryAfter;
  }
}
