package org.messagepump.core;

import java.time.Duration;
import java.util.Optional;

/**
 * Thrown by a user handler to say "the target is temporarily unavailable": the delivery becomes
 * {@code Busy} and is retried without counting a failure, after the backoff base or, when given,
 * after {@link #retryAfter()} (at least the backoff base, at most the backoff cap).
 */
public class BusyException extends PumpException {

  private final transient Duration retryAfter;

  /** A busy signal with a reason for the logs; retried after the backoff base. */
  public BusyException(String reason) {
    super(reason);
    this.retryAfter = null;
  }

  /** A busy signal with a reason and the underlying cause; retried after the backoff base. */
  public BusyException(String reason, Throwable cause) {
    super(reason, cause);
    this.retryAfter = null;
  }

  /**
   * A busy signal that says when to try again (a downstream's {@code Retry-After}, a breaker's
   * remaining wait). {@code retryAfter} must not be negative; the pump waits at least its backoff
   * base and at most its backoff cap.
   */
  public BusyException(String reason, Duration retryAfter) {
    this(reason, retryAfter, null);
  }

  /** As {@link #BusyException(String, Duration)}, with the underlying cause. */
  public BusyException(String reason, Duration retryAfter, Throwable cause) {
    super(reason, cause);
    this.retryAfter = RetryAfter.check(retryAfter);
  }

  /** The delay the handler asked for, or empty for the backoff base. */
  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(retryAfter);
  }
}
