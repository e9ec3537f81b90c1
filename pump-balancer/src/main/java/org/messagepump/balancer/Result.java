package org.messagepump.balancer;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import org.messagepump.balancer.internal.Json;

/**
 * What a {@link BalancedHandler} decided for one message it handled: the closed set Ok, Requeue and
 * Handoff. A handler says Busy by throwing {@link org.messagepump.core.BusyException} and Failed by
 * throwing anything else, as the handlers of every driver do.
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

  /** Handed off downstream with the driver's lease duration. */
  static Result handoff() {
    return new Handoff(null);
  }

  /** Handed off downstream with a lease of the given duration. */
  static Result handoff(Duration lease) {
    return new Handoff(Objects.requireNonNull(lease, "lease"));
  }
}
