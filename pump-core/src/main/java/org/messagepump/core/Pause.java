package org.messagepump.core;

import java.time.Instant;

/**
 * A name paused cluster-wide: while the pause stands, no pump of any process acquires work of that
 * name (a command type, an event handler key, a partition group); work already being handled
 * finishes, and producing goes on. What the operators of the drivers list ({@code
 * CommandOperations.pausedTypes()}, {@code EventOperations.pausedHandlers()}, {@code
 * BalancerOperations.pausedGroups()}).
 *
 * @param name the paused name: the command type, the handler key or the partition group
 * @param pausedAt when it was paused (database clock)
 * @param reason why, as given by whoever paused it, or null
 */
public record Pause(String name, Instant pausedAt, String reason) {}
