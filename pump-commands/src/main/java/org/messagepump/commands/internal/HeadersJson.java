package org.messagepump.commands.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.jooq.JSONB;
import org.messagepump.core.PumpException;

/** Headers ({@code Map<String, String>}) to and from the {@code jsonb} column. */
public final class HeadersJson {

  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final TypeReference<Map<String, String>> MAP = new TypeReference<>() {};

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
    if (json == null || json.data() == null || json.data().isBlank() || "{}".equals(json.data())) {
      return Map.of();
    }
    try {
      Map<String, String> m = MAPPER.readValue(json.data(), MAP);
      return m == null ? Map.of() : m;
    } catch (JsonProcessingException e) {
      throw new PumpException("stored headers are not a JSON object of strings: " + json.data(), e);
    }
  }
}
