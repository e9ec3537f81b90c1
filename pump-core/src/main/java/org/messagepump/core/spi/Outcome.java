package org.messagepump.core.spi;

import java.time.Duration;
import java.util.Objects;
import org.messagepump.core.RetryAfter;

/** What became of one delivery: the closed set the pump maps to commit, postponement or parking. */
public sealed interface Outcome {

  /** The delivery is done; the driver has already written its bookkeeping (delete, advance). */
  record Handled() implements Outcome {}

  /**
   * The target is temporarily unavailable: no failure counted, retried after {@code retryAfter} (at
   * least the backoff base, at most the backoff cap), or after the backoff base when {@code
   * retryAfter} is null.
   */
  record Busy(String reason, Duration retryAfter) implements Outcome {
    public Busy {
      Objects.requireNonNull(reason, "reason");
      RetryAfter.check(retryAfter);
    }

    /** Busy, retried after the backoff base. */
    public Busy(String reason) {
      this(reason, null);
    }
  }

  /** The delivery failed: failures + 1, postponed with capped exponential backoff. */
  record Failed(Throwable cause) implements Outcome {
    public Failed {
      Objects.requireNonNull(cause, "cause");
    }
  }

  /** The shared {@link Handled} instance. */
  Outcome HANDLED = new Handled();

  /** A {@link Busy} outcome with a reason. */
  static Outcome busy(String reason) {
    return new Busy(reason);
  }

  /** A {@link Busy} outcome that asks to be retried after {@code retryAfter}. */
  static Outcome busy(String reason, Duration retryAfter) {
    return new Busy(reason, Objects.requireNonNull(retryAfter, "retryAfter"));
  }

  /** A {@link Failed} outcome with its cause. */
  static Outcome failed(Throwable cause) {
    return new Failed(cause);
  }
}
