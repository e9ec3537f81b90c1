package org.messagepump.balancer.model;

import java.time.Duration;
import java.time.Instant;

/**
 * One key of a group as the database holds it.
 *
 * @param partitionKey the key
 * @param messageCount messages waiting or in flight
 * @param locked true when a transaction holds the key right now (a handler is running)
 * @param leasedMessageId the handed-off message, or {@code null} when none is leased
 * @param leaseUntil when that lease expires (database clock), or {@code null}
 * @param failures failed attempts since the last success
 * @param resumeAt when a postponed key is due again, or {@code null} when it is due now
 * @param parkedReason why the key is parked, or {@code null} when it is not
 * @param oldestAge age of its oldest message by the database clock ({@link Duration#ZERO} when
 *     empty)
 */
public record PartitionStats(
    String partitionKey,
    long messageCount,
    boolean locked,
    Long leasedMessageId,
    Instant leaseUntil,
    int failures,
    Instant resumeAt,
    String parkedReason,
    Duration oldestAge) {

  /** True when a message of this key is in flight: locked by a handler or leased downstream. */
  public boolean inFlight() {
    return locked || leasedMessageId != null;
  }

  /** True when the key is parked. */
  public boolean parked() {
    return parkedReason != null;
  }
}
