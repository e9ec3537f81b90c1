package org.messagepump.balancer;

import java.util.Map;
import org.messagepump.balancer.internal.Json;

/**
 * A message to store with {@link MessageBalancer#storeMessages(java.util.List)}: its partition key,
 * content, and properties as a JSON object ({@code null} for {@code {}}). Nothing is checked here;
 * {@code storeMessages} checks every element, with the limits of its group, before anything is
 * sent. The record compares {@code content} by identity (an array).
 *
 * @param partitionKey the key the message is stored under
 * @param content the message's bytes
 * @param propertiesJson a JSON object, or {@code null} for {@code {}}
 */
public record NewMessage(String partitionKey, byte[] content, String propertiesJson) {

  /** A message with empty properties. */
  public static NewMessage of(String partitionKey, byte[] content) {
    return new NewMessage(partitionKey, content, null);
  }

  /**
   * A message whose properties are a map, written as a JSON object now (its size and content are
   * checked when it is stored).
   *
   * @throws NullPointerException when {@code properties} is null
   * @throws IllegalArgumentException when the map cannot be written as JSON
   */
  public static NewMessage of(String partitionKey, byte[] content, Map<String, ?> properties) {
    if (properties == null) {
      throw new NullPointerException("properties must not be null");
    }
    return new NewMessage(partitionKey, content, Json.write(properties));
  }
}
