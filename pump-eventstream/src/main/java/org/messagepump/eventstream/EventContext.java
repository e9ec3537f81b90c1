package org.messagepump.eventstream;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.messagepump.core.DeliveryContext;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;

/**
 * What an {@link EventHandler} or {@link ProjectionHandler} gets besides its event: the delivery's
 * open transaction (write effects through it), the event's identity, metadata and stream position,
 * and {@link #append} for events this one causes, written to the same store in the same
 * transaction.
 */
public final class EventContext implements DeliveryContext {

  private final EventStore store;
  private final Tx tx;
  private final String handlerKey;
  private final StoredEvent event;
  private final long checkpointOffset;
  private final int attempt;

  EventContext(
      EventStore store,
      Tx tx,
      String handlerKey,
      StoredEvent event,
      long checkpointOffset,
      int attempt) {
    this.store = store;
    this.tx = tx;
    this.handlerKey = handlerKey;
    this.event = event;
    this.checkpointOffset = checkpointOffset;
    this.attempt = attempt;
  }

  /** The delivery's transaction: the handler's writes commit with the checkpoint advance. */
  @Override
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

  /** Which attempt this is: 1 the first time, the stream's failures + 1 after failures. */
  @Override
  public int attempt() {
    return attempt;
  }

  /** The event's message id (a UUID). */
  @Override
  public String messageId() {
    return event.envelope().messageId();
  }

  /** The event's stable type name. */
  @Override
  public String messageType() {
    return event.envelope().type();
  }

  /** When the event was recorded, by the database clock. */
  public Instant recordedAt() {
    return event.envelope().createdAt();
  }

  /** The event's correlation id as stored, or {@code null}. */
  @Override
  public String correlationId() {
    return event.envelope().correlationId();
  }

  /** The event's causation id as stored, or {@code null}. */
  @Override
  public String causationId() {
    return event.envelope().causationId();
  }

  /** The headers stored with the event's metadata (empty when it has none). */
  @Override
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
    return EventMetadata.of(inheritedCorrelationId(), messageId());
  }

  /**
   * Appends events this one causes to the same store, in this delivery's transaction, by the rules
   * of {@link EventStore#append(Tx, List, EventMetadata)} (any stream no other transaction is
   * appending to, else a new one): they commit with the checkpoint advance, or not at all. Their
   * causation id is this event's message id; their correlation id is this event's, or this event's
   * message id when it has none.
   *
   * @throws NullPointerException when the list or one of its events is null; nothing is written
   * @throws IllegalArgumentException as {@link EventStore#append(Tx, List, EventMetadata)}
   */
  public AppendResult append(List<?> events) {
    return append(events, EventMetadata.NONE);
  }

  /**
   * As {@link #append(List)}, with {@code metadata}'s headers and, when it sets one, its
   * correlation id; the causation id is always this event's message id.
   */
  public AppendResult append(List<?> events, EventMetadata metadata) {
    Objects.requireNonNull(metadata, "metadata must not be null");
    String correlation =
        metadata.correlationId() != null ? metadata.correlationId() : inheritedCorrelationId();
    return store.append(
        tx, events, new EventMetadata(correlation, messageId(), metadata.headers()));
  }

  private String inheritedCorrelationId() {
    return correlationId() != null ? correlationId() : messageId();
  }
}
