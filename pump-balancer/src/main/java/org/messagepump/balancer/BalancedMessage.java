package org.messagepump.balancer;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.messagepump.balancer.internal.Json;

/**
 * One stored message as a handler sees it.
 *
 * @param id the stable 64-bit id (downstream deduplicates on it)
 * @param group the partition group
 * @param partitionKey the partition key
 * @param content the stored bytes
 * @param propertiesJson the properties, a JSON object
 * @param receivedAt when it was stored, by the database clock
 * @param attempts how many leases of this message expired so far
 * @param failures failed attempts of its key since the last success
 * @param handoffToken the token a {@link Result.Handoff} of this delivery commits; pass it
 *     downstream with the id so the consumer can confirm
 */
public record BalancedMessage(
    long id,
    String group,
    String partitionKey,
    byte[] content,
    String propertiesJson,
    Instant receivedAt,
    int attempts,
    int failures,
    UUID handoffToken) {

  public BalancedMessage {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(partitionKey, "partitionKey");
    Objects.requireNonNull(content, "content");
    Objects.requireNonNull(propertiesJson, "propertiesJson");
    Objects.requireNonNull(handoffToken, "handoffToken");
  }

  /** The properties parsed into a map (numbers, strings, booleans, lists, maps). */
  public Map<String, Object> properties() {
    return Json.read(propertiesJson);
  }

  /** Names the message without its data (key, content and properties may be personal data). */
  @Override
  public String toString() {
    return "BalancedMessage[id="
        + id
        + ", group="
        + group
        + ", partitionKey="
        + partitionKey.length()
        + " chars"
        + ", content="
        + content.length
        + " bytes, properties="
        + propertiesJson.length()
        + " chars"
        + ", attempts="
        + attempts
        + ", failures="
        + failures
        + "]";
  }
}
