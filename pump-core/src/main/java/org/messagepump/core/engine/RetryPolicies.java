package org.messagepump.core.engine;

import java.util.Map;
import org.messagepump.core.RetryPolicy;

/** A pump's retry policies: one for every message type, overridden for some types. */
final class RetryPolicies {

  private final RetryPolicy perPump;
  private final Map<String, RetryPolicy> perType;

  RetryPolicies(RetryPolicy perPump, Map<String, RetryPolicy> perType) {
    this.perPump = perPump;
    this.perType = Map.copyOf(perType);
  }

  /** The pump's policy, for every type without one of its own. */
  RetryPolicy perPump() {
    return perPump;
  }

  /** The policy of a message type. */
  RetryPolicy of(String messageType) {
    RetryPolicy p = messageType == null ? null : perType.get(messageType);
    return p != null ? p : perPump;
  }
}
