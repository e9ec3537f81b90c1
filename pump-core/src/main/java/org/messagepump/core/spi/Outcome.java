package org.messagepump.core.spi;

import java.util.Objects;

/** What became of one delivery: the closed set the pump maps to commit, postponement or parking. */
public sealed interface Outcome {

  /** The delivery is done; the driver has already written its bookkeeping (delete, advance). */
  record Handled() implements Outcome {}

  /** The target is temporarily unavailable: retry after {@code backoffBase}, no failure counted. */
  record Busy(String reason) implements Outcome {
    public Busy {
      Objects.requireNonNull(reason, "reason");
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

  /** A {@link Failed} outcome with its cause. */
  static Outcome failed(Throwable cause) {
    return new Failed(cause);
  }
}
