package org.messagepump.balancer.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.messagepump.core.Limits;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.spi.Inputs;

/** Properties as JSON objects: validation, reading and writing. */
public final class Json {

  /**
   * Numbers are read exactly (BigDecimal), so a value is stored as given, and one that does not fit
   * PostgreSQL's numeric (or is not finite) is refused here rather than by the server.
   */
  private static final ObjectMapper MAPPER =
      new ObjectMapper()
          .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .setNodeFactory(
              com.fasterxml.jackson.databind.node.JsonNodeFactory.withExactBigDecimals(true));

  /** PostgreSQL numeric: at most 131072 digits before the point and 16383 after. */
  private static final int MAX_NUMERIC_INTEGER_DIGITS = 131_072;

  private static final int MAX_NUMERIC_SCALE = 16_383;
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
    String bad = badNumber(node);
    if (bad != null) {
      throw new IllegalArgumentException(what + " hold a number PostgreSQL cannot store: " + bad);
    }
    return node.toString();
  }

  /** A description of the first number under {@code node} that jsonb cannot hold, or null. */
  private static String badNumber(JsonNode node) {
    if (node.isContainerNode()) {
      for (JsonNode child : node) {
        String bad = badNumber(child);
        if (bad != null) {
          return bad;
        }
      }
      return null;
    }
    if (!node.isNumber()) {
      return null;
    }
    if (node.isFloatingPointNumber() && !node.isBigDecimal()) {
      double d = node.doubleValue();
      return Double.isFinite(d) ? null : "not finite";
    }
    java.math.BigDecimal v = node.decimalValue();
    int integerDigits = v.precision() - v.scale();
    if (integerDigits > MAX_NUMERIC_INTEGER_DIGITS || v.scale() > MAX_NUMERIC_SCALE) {
      return "out of numeric range";
    }
    return null;
  }

  /** Writes a map as a JSON object. */
  public static String write(Map<String, ?> properties) {
    try {
      return MAPPER.writeValueAsString(properties);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("properties cannot be written as JSON: " + e, e);
    }
  }

  /**
   * Checks {@code json} against {@code limits} ({@link Inputs#json}: size, no NUL) and that it is
   * one JSON object; returns it compactly written.
   *
   * @throws IllegalArgumentException naming {@code what} and the limit
   * @throws NullPointerException when {@code json} is null
   */
  public static String object(String json, String what, Limits limits) {
    Inputs.json(what, json, limits.maxPropertiesBytes());
    String compact = object(json, what);
    // Again on the written form: it holds \\u0000 only for a NUL, and may differ in length.
    return Inputs.json(what, compact, limits.maxPropertiesBytes());
  }

  /** Writes a map as a JSON object and checks it as {@link #object(String, String, Limits)}. */
  public static String write(Map<String, ?> properties, String what, Limits limits) {
    if (properties == null) {
      throw new NullPointerException(what + " must not be null");
    }
    return object(write(properties), what, limits);
  }

  /**
   * {@code json}, a JSON object checked by {@link #object(String, String, Limits)}, with each of
   * {@code headers} added as a top-level string property unless the object holds that name already
   * (its own value wins); checked against {@code limits} again. Returns {@code json} itself when
   * {@code headers} is empty.
   *
   * @throws IllegalArgumentException naming {@code what} when the result is over the limit
   */
  public static String withDefaults(
      String json, Map<String, String> headers, String what, Limits limits) {
    if (headers.isEmpty()) {
      return json;
    }
    com.fasterxml.jackson.databind.node.ObjectNode node;
    try {
      node = (com.fasterxml.jackson.databind.node.ObjectNode) MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(what + " must be a JSON object", e);
    }
    headers.forEach(
        (name, value) -> {
          if (!node.has(name)) {
            node.put(name, value);
          }
        });
    return Inputs.json(what, node.toString(), limits.maxPropertiesBytes());
  }

  /** Reads a JSON object into a map. */
  public static Map<String, Object> read(String json) {
    try {
      return MAPPER.readValue(json, MAP);
    } catch (JsonProcessingException e) {
      // The parser's message quotes the stored text: keep it out of the exception.
      throw new UndecodableMessageException(
          "stored properties cannot be read as a JSON object ("
              + e.getClass().getSimpleName()
              + ")",
          null);
    }
  }

  /**
   * Why stored properties cannot be read as a JSON object ("are not ..."), or null when they can.
   * Never quotes the text.
   */
  static String storedProblem(String json) {
    if (json.equals("{}")) {
      return null; // the common case, without a parser
    }
    try {
      JsonNode node = MAPPER.readTree(json);
      return node != null && node.isObject() ? null : "are not a JSON object";
    } catch (JsonProcessingException | RuntimeException e) {
      return "cannot be parsed as JSON (" + e.getClass().getSimpleName() + ")";
    }
  }
}
