package org.messagepump.balancer.internal;

import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * What acquisition learned about one delivery, kept as the delivery's driver state.
 *
 * @param group the partition group
 * @param key the partition key
 * @param oldRotation the key's rotation before acquisition moved it to the back (a postponed key
 *     gets it back, so it keeps its place)
 * @param messageId the head message
 * @param content the message content
 * @param propertiesJson its properties
 * @param receivedAt when it was stored
 * @param attempts expired leases so far
 * @param failures the key's failures
 * @param token the hand-off token of this delivery
 * @param problem why the stored row cannot be handed to a handler (names the column, never quotes
 *     its data), or {@code null} when it can
 * @param stored with a problem: the row's columns as stored, to write it back unchanged; else
 *     {@code null} (the decoded columns are written back)
 */
public record AcquiredMessage(
    String group,
    String key,
    long oldRotation,
    long messageId,
    byte[] content,
    String propertiesJson,
    OffsetDateTime receivedAt,
    int attempts,
    int failures,
    UUID token,
    String problem,
    Stored stored) {

  /**
   * A row's columns as the database gave them, for a row that cannot be decoded: written back as
   * they are when its message is kept.
   *
   * @param content the content, or null
   * @param properties the properties' text, or null
   * @param receivedAt received_at's text, or null
   */
  public record Stored(byte[] content, String properties, String receivedAt) {}
}
