package org.messagepump.balancer;

import java.time.Instant;

/**
 * A partition group paused cluster-wide: no pump acquires its messages until it is resumed.
 *
 * @param group the partition group
 * @param pausedAt when it was paused (database clock)
 * @param reason why, as given by whoever paused it, or null
 */
public record PausedGroup(String group, Instant pausedAt, String reason) {}
