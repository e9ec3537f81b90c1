package org.messagepump.balancer;

import java.time.Instant;
import java.util.Objects;

/**
 * A parked key of a group, an entry of {@link BalancerOperations#parkedKeys(String, ParkedKey,
 * int)}; pass the last one of a page to read the next.
 *
 * @param partitionKey the key
 * @param reason why it was parked, or {@code null}
 * @param parkedAt when it was parked, by the database clock
 */
public record ParkedKey(String partitionKey, String reason, Instant parkedAt) {

  /** A parked key; the key and the time are required. */
  public ParkedKey {
    Objects.requireNonNull(partitionKey, "partitionKey");
    Objects.requireNonNull(parkedAt, "parkedAt");
  }
}
