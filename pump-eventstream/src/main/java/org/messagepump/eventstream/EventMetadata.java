package org.messagepump.eventstream;

import java.util.Map;

/**
 * Metadata stored with every event of one append: correlation and causation ids and free-form
 * headers.
 *
 * @param correlationId id shared by every message of one conversation, or {@code null}
 * @param causationId id of the message that caused these events, or {@code null}
 * @param headers string headers, never {@code null} (copied)
 */
public record EventMetadata(String correlationId, String causationId, Map<String, String> headers) {

  /** No correlation, no causation, no headers. */
  public static final EventMetadata NONE = new EventMetadata(null, null, Map.of());

  public EventMetadata {
    headers = headers == null ? Map.of() : Map.copyOf(headers);
  }

  /** Metadata with a correlation and a causation id and no headers. */
  public static EventMetadata of(String correlationId, String causationId) {
    return new EventMetadata(correlationId, causationId, Map.of());
  }
}
