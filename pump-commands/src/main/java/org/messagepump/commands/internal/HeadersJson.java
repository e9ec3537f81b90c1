package org.messagepump.commands.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.jooq.JSONB;
import org.messagepump.core.PumpException;

/** Headers ({@code Map<String, String>}) to and from the {@code jsonb} column. */
public final class HeadersJson {

  private static final ObjectMapper MAPPER = new ObjectMapper();

  private HeadersJson() {}

  /** The headers as a JSON object. */
  public static JSONB write(Map<String, String> headers) {
    if (headers.isEmpty()) {
      return JSONB.valueOf("{}");
    }
    try {
      return JSONB.valueOf(MAPPER.writeValueAsString(headers));
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("headers cannot be written as JSON: " + e.getMessage(), e);
    }
  }

  /** The headers of a JSON object (null or empty gives an empty map). */
  public static Map<String, String> read(JSONB json) {
    return read(json == null ? null : json.data());
  }

  /**
   * The headers of a JSON object's text (null or empty gives an empty map). Anything else (an
   * array, a nested object, a number or null as a value) throws a {@link PumpException} whose
   * message names the problem but never quotes the stored data.
   */
  public static Map<String, String> read(String json) {
    if (json == null || json.isBlank() || "{}".equals(json)) {
      return Map.of();
    }
    com.fasterxml.jackson.databind.JsonNode tree;
    try {
      tree = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new PumpException("stored headers are not valid JSON", null);
    }
    if (tree == null || !tree.isObject()) {
      throw new PumpException("stored headers are not a JSON object", null);
    }
    Map<String, String> m = new java.util.LinkedHashMap<>();
    var fields = tree.fields();
    while (fields.hasNext()) {
      var f = fields.next();
      if (!f.getValue().isTextual()) {
        throw new PumpException(
            "stored headers are not a JSON object of strings (a value is "
                + f.getValue().getNodeType().name().toLowerCase(java.util.Locale.ROOT)
                + ")",
            null);
      }
      m.put(f.getKey(), f.getValue().textValue());
    }
    return java.util.Collections.unmodifiableMap(m);
  }
}
