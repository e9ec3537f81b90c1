package org.messagepump.eventstream;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Metadata stored with every event of one append: correlation and causation ids and free-form
 * headers.
 *
 * @param correlationId id shared by every message of one conversation, or {@code null}
 * @param causationId id of the message that caused these events, or {@code null}
 * @param headers string headers, never {@code null} (copied, in iteration order; null becomes
 *     empty) without null names or values. Sizes, NUL characters and the id lengths are checked
 *     against the store's {@link org.messagepump.core.Limits} when the metadata is appended.
 */
public record EventMetadata(String correlationId, String causationId, Map<String, String> headers) {

  /** No correlation, no causation, no headers. */
  public static final EventMetadata NONE = new EventMetadata(null, null, Map.of());

  /**
   * @throws NullPointerException naming the header when a header name or value is null
   */
  public EventMetadata {
    if (headers == null || headers.isEmpty()) {
      headers = Map.of();
    } else {
      Map<String, String> copy = new LinkedHashMap<>();
      for (Map.Entry<String, String> e : headers.entrySet()) {
        if (e.getKey() == null) {
          throw new NullPointerException("headers must not have a null name");
        }
        if (e.getValue() == null) {
          throw new NullPointerException("header '" + e.getKey() + "' must not be null");
        }
        copy.put(e.getKey(), e.getValue());
      }
      headers = Collections.unmodifiableMap(copy);
    }
  }

  /** Metadata with a correlation and a causation id and no headers. */
  public static EventMetadata of(String correlationId, String causationId) {
    return new EventMetadata(correlationId, causationId, Map.of());
  }
}
