package org.messagepump.eventstream;

import java.time.Instant;

/**
 * One stream: its id and the offset its next event will get (its committed length).
 *
 * @param id the stream id
 * @param nextOffset the number of committed events in the stream
 * @param createdAt when the stream was created, by the database clock
 */
public record StreamInfo(long id, long nextOffset, Instant createdAt) {}
