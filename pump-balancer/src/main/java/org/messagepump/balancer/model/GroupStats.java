package org.messagepump.balancer.model;

import java.time.Duration;

/**
 * One partition group as the database holds it.
 *
 * @param group the group
 * @param partitions keys with messages or leases
 * @param messages messages stored (waiting or in flight)
 * @param leases keys with a hand-off lease
 * @param parked parked keys
 * @param oldestAge age of the oldest message by the database clock ({@link Duration#ZERO} when
 *     empty)
 */
public record GroupStats(
    String group, long partitions, long messages, long leases, long parked, Duration oldestAge) {}
