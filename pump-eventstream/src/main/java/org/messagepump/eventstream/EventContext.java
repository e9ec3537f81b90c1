package org.messagepump.eventstream;

import java.time.Instant;
import java.util.Map;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;

/**
 * What a handler knows about the event it handles: the open transaction (write effects through it),
 * the event's stream position and metadata.
 */
public final class EventContext {

  private final Tx tx;
  private final String handlerKey;
  private final StoredEvent event;
  private final long checkpointOffset;
  private final int attempt;

  EventContext(Tx tx, String handlerKey, StoredEvent event, long checkpointOffset, int attempt) {
    this.tx = tx;
    this.handlerKey = handlerKey;
    this.event = event;
    this.checkpointOffset = checkpointOffset;
    this.attempt = attempt;
  }

  /** The delivery's transaction: the handler's writes commit with the checkpoint advance. */
  public Tx tx() {
    return tx;
  }

  /** The handler key this delivery is for. */
  public String handlerKey() {
    return handlerKey;
  }

  /** The stream holding the event. */
  public long streamId() {
    return event.streamId();
  }

  /** The event's offset in its stream. */
  public long offset() {
    return event.offset();
  }

  /** The handler's checkpoint of this stream when the event was acquired (at most the offset). */
  public long checkpointOffset() {
    return checkpointOffset;
  }

  /** The next offset a {@link ProjectionHandler} returns when it applied this event: offset + 1. */
  public long nextOffset() {
    return event.offset() + 1;
  }

  /** Which attempt this is (1 on first delivery). */
  public int attempt() {
    return attempt;
  }

  /** The event's message id. */
  public String messageId() {
    return event.envelope().messageId();
  }

  /** The event's stable type name. */
  public String type() {
    return event.envelope().type();
  }

  /** When the event was recorded, by the database clock. */
  public Instant recordedAt() {
    return event.envelope().createdAt();
  }

  /** The event's correlation id, or {@code null}. */
  public String correlationId() {
    return event.envelope().correlationId();
  }

  /** The event's causation id, or {@code null}. */
  public String causationId() {
    return event.envelope().causationId();
  }

  /** The event's headers. */
  public Map<String, String> headers() {
    return event.envelope().headers();
  }

  /** The stored envelope (payload bytes included). */
  public Envelope envelope() {
    return event.envelope();
  }

  /**
   * Metadata for messages this event causes: the same correlation id (or this event's id when it
   * has none) and this event as the cause.
   */
  public EventMetadata causedMetadata() {
    String correlation = correlationId() == null ? messageId() : correlationId();
    return EventMetadata.of(correlation, messageId());
  }
}
