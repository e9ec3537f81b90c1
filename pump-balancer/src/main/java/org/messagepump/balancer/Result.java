package org.messagepump.balancer;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import org.messagepump.balancer.internal.Json;

/**
 * What a {@link BalancedHandler} decided for one message: the closed set Ok, Requeue, Busy, Failed
 * and Handoff.
 */
public sealed interface Result {

  /** Done: the message is removed in the handler's transaction. */
  record Ok() implements Result {}

  /**
   * Handle again later: the message stays at the front of its key, the key goes to the back of the
   * rotation; {@code propertiesJson} (a JSON object) replaces its properties unless {@code null}.
   */
  record Requeue(String propertiesJson) implements Result {
    public Requeue {
      if (propertiesJson != null) {
        propertiesJson = Json.object(propertiesJson, "properties");
      }
    }
  }

  /**
   * The target is temporarily unavailable: the key keeps its place and is retried after {@code
   * retryAfter} (at least the pump's backoff base, at most its cap), or after the backoff base when
   * {@code retryAfter} is null. No failure is counted.
   */
  record Busy(String reason, Duration retryAfter) implements Result {
    public Busy {
      Objects.requireNonNull(reason, "reason");
      org.messagepump.core.RetryAfter.check(retryAfter);
    }

    /** Busy, retried after the backoff base. */
    public Busy(String reason) {
      this(reason, null);
    }
  }

  /** The message failed: the key is postponed with backoff (parked past {@code maxFailures}). */
  record Failed(Throwable cause) implements Result {
    public Failed {
      Objects.requireNonNull(cause, "cause");
    }
  }

  /**
   * The message went downstream: a lease blocks its key until {@code confirm}, {@code requeue} or
   * expiry; {@code lease} overrides the driver's lease duration unless {@code null}.
   */
  record Handoff(Duration lease) implements Result {
    public Handoff {
      if (lease != null && (lease.isNegative() || lease.isZero())) {
        throw new IllegalArgumentException("lease must be positive: " + lease);
      }
    }
  }

  /** The shared {@link Ok}. */
  Result OK = new Ok();

  /** Remove the message. */
  static Result ok() {
    return OK;
  }

  /** Requeue with unchanged properties. */
  static Result requeue() {
    return new Requeue(null);
  }

  /** Requeue, replacing the properties with a JSON object. */
  static Result requeue(String propertiesJson) {
    return new Requeue(Objects.requireNonNull(propertiesJson, "propertiesJson"));
  }

  /** Requeue, replacing the properties with a map serialized as a JSON object. */
  static Result requeue(Map<String, ?> properties) {
    return new Requeue(Json.write(Objects.requireNonNull(properties, "properties")));
  }

  /** Busy with a reason. */
  static Result busy(String reason) {
    return new Busy(reason);
  }

  /** Busy, retried after {@code retryAfter} (bounded by the pump's backoff base and cap). */
  static Result busy(String reason, Duration retryAfter) {
    return new Busy(reason, Objects.requireNonNull(retryAfter, "retryAfter"));
  }

  /** Failed with a cause. */
  static Result failed(Throwable cause) {
    return new Failed(cause);
  }

  /** Failed with a message. */
  static Result failed(String reason) {
    return new Failed(new IllegalStateException(Objects.requireNonNull(reason, "reason")));
  }

  /** Handed off downstream with the driver's lease duration. */
  static Result handoff() {
    return new Handoff(null);
  }

  /** Handed off downstream with a lease of the given duration. */
  static Result handoff(Duration lease) {
    return new Handoff(Objects.requireNonNull(lease, "lease"));
  }
}
