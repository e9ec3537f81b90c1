package org.messagepump.balancer.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;

/** Properties as JSON objects: validation, reading and writing. */
public final class Json {

  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {};

  private Json() {}

  /**
   * Checks that {@code json} is one JSON object and returns it compactly written.
   *
   * @throws IllegalArgumentException naming {@code what} when it is not
   */
  public static String object(String json, String what) {
    if (json == null) {
      throw new IllegalArgumentException(what + " must not be null");
    }
    JsonNode node;
    try {
      node = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          what + " must be a JSON object: " + e.getOriginalMessage(), e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalArgumentException(
          what + " must be a JSON object, not " + (node == null ? "nothing" : node.getNodeType()));
    }
    return node.toString();
  }

  /** Writes a map as a JSON object. */
  public static String write(Map<String, ?> properties) {
    try {
      return MAPPER.writeValueAsString(properties);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("properties cannot be written as JSON: " + e, e);
    }
  }

  /** Reads a JSON object into a map. */
  public static Map<String, Object> read(String json) {
    try {
      return MAPPER.readValue(json, MAP);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("stored properties are not a JSON object: " + json, e);
    }
  }
}
