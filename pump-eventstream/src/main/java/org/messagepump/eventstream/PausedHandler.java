package org.messagepump.eventstream;

import java.time.Instant;

/**
 * An event handler key paused cluster-wide: no pump acquires its events until it is resumed.
 *
 * @param handlerKey the handler key
 * @param pausedAt when it was paused (database clock)
 * @param reason why, as given by whoever paused it, or null
 */
public record PausedHandler(String handlerKey, Instant pausedAt, String reason) {}
