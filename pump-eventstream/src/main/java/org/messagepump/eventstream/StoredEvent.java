package org.messagepump.eventstream;

import java.util.Objects;
import org.messagepump.core.Envelope;

/**
 * An event as stored in a stream: its position and its envelope (the envelope's {@code createdAt}
 * is the time it was recorded, by the database clock).
 *
 * @param streamId the stream holding the event
 * @param offset the event's offset in its stream
 * @param envelope id, type, metadata and payload bytes
 */
public record StoredEvent(long streamId, long offset, Envelope envelope) {

  public StoredEvent {
    Objects.requireNonNull(envelope, "envelope");
  }
}
