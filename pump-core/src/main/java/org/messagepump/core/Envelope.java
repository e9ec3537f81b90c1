package org.messagepump.core;

import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;

/**
 * A message as stored: identity, type, correlation metadata, headers and the encoded payload.
 *
 * @param messageId unique id of the message (a UUID in text form, or a number for balancer
 *     messages)
 * @param type the stable type name the codec maps to a Java class
 * @param correlationId id shared by every message of one conversation (may be {@code null})
 * @param causationId id of the message that caused this one (may be {@code null})
 * @param createdAt when the message was stored, by the database clock
 * @param headers free-form string headers, never {@code null}
 * @param payload the encoded message, never {@code null}
 */
public record Envelope(
    String messageId,
    String type,
    String correlationId,
    String causationId,
    Instant createdAt,
    Map<String, String> headers,
    byte[] payload) {

  public Envelope {
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(type, "type");
    headers = headers == null ? Map.of() : Map.copyOf(headers);
    Objects.requireNonNull(payload, "payload");
  }

  /**
   * A message with only an id, a type and a payload: no correlation, causation, time or headers.
   */
  public static Envelope of(String messageId, String type, byte[] payload) {
    return new Envelope(messageId, type, null, null, null, Map.of(), payload);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Envelope e
        && messageId.equals(e.messageId)
        && type.equals(e.type)
        && Objects.equals(correlationId, e.correlationId)
        && Objects.equals(causationId, e.causationId)
        && Objects.equals(createdAt, e.createdAt)
        && headers.equals(e.headers)
        && Arrays.equals(payload, e.payload);
  }

  @Override
  public int hashCode() {
    return Objects.hash(messageId, type) * 31 + Arrays.hashCode(payload);
  }

  @Override
  public String toString() {
    return "Envelope[messageId="
        + messageId
        + ", type="
        + type
        + ", correlationId="
        + correlationId
        + ", causationId="
        + causationId
        + ", createdAt="
        + createdAt
        + ", headers="
        + headers
        + ", payload="
        + payload.length
        + " bytes]";
  }
}
