package org.messagepump.commands;

import java.time.Instant;

/**
 * A command type paused cluster-wide: no pump acquires its commands until it is resumed.
 *
 * @param type the command type name
 * @param pausedAt when it was paused (database clock)
 * @param reason why, as given by whoever paused it, or null
 */
public record PausedType(String type, Instant pausedAt, String reason) {}
