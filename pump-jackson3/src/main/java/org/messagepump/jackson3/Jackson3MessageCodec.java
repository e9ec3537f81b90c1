package org.messagepump.jackson3;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.UndecodableMessageException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.ObjectReader;
import tools.jackson.databind.cfg.DateTimeFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * A {@link MessageCodec} on Jackson 3 ({@code tools.jackson}): JSON payloads, type names from
 * {@link MessageTypes}. It behaves as {@link org.messagepump.core.JsonMessageCodec}, the Jackson 2
 * codec, does: the same JSON for the same message with the default mappers, an unregistered type or
 * class refused with {@link org.messagepump.core.UnknownMessageTypeException}, and a payload that
 * does not decode into its class refused with {@link UndecodableMessageException}.
 */
public final class Jackson3MessageCodec implements MessageCodec {

  private final MessageTypes types;
  private final ObjectMapper mapper;
  // One reader per class: it keeps the class's deserializer, which mapper.readValue looks up on
  // every call.
  private final Map<Class<?>, ObjectReader> readers = new ConcurrentHashMap<>();

  private Jackson3MessageCodec(MessageTypes types, ObjectMapper mapper) {
    this.types = Objects.requireNonNull(types, "types");
    this.mapper = Objects.requireNonNull(mapper, "mapper");
  }

  /**
   * A codec with a default mapper: Java time as ISO strings, unknown properties rejected (a payload
   * that does not match its class is undecodable, not silently half-read), null for a primitive and
   * trailing tokens rejected. Jackson 3's own defaults differ on unknown properties, so each is set
   * here.
   */
  public static Jackson3MessageCodec of(MessageTypes types) {
    ObjectMapper mapper =
        JsonMapper.builder()
            .disable(DateTimeFeature.WRITE_DATES_AS_TIMESTAMPS)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();
    return new Jackson3MessageCodec(types, mapper);
  }

  /** A codec with the caller's mapper (for example the application's {@code JsonMapper}). */
  public static Jackson3MessageCodec of(MessageTypes types, ObjectMapper mapper) {
    return new Jackson3MessageCodec(types, mapper);
  }

  /** The registry this codec uses. */
  public MessageTypes types() {
    return types;
  }

  @Override
  public String typeOf(Class<?> messageClass) {
    return types.nameOf(messageClass);
  }

  @Override
  public Class<?> classOf(String type) {
    return types.classOf(type);
  }

  @Override
  public byte[] encode(Object message) {
    Objects.requireNonNull(message, "message");
    types.nameOf(message.getClass());
    try {
      return mapper.writeValueAsBytes(message);
    } catch (JacksonException e) {
      throw new IllegalArgumentException(
          "message of class "
              + message.getClass().getName()
              + " cannot be encoded as JSON: "
              + e.getOriginalMessage(),
          e);
    }
  }

  @Override
  public Object decode(String type, byte[] payload) {
    Class<?> c = types.classOf(type);
    if (payload == null) {
      throw new UndecodableMessageException("payload of type '" + type + "' is missing", null);
    }
    Object value;
    try {
      value = readers.computeIfAbsent(c, mapper::readerFor).readValue(payload);
    } catch (JacksonException e) {
      throw new UndecodableMessageException(
          "payload of type '"
              + type
              + "' ("
              + payload.length
              + " bytes) does not decode into "
              + c.getName(),
          e.getOriginalMessage(),
          e);
    }
    if (value == null) {
      throw new UndecodableMessageException("payload of type '" + type + "' is JSON null", null);
    }
    return value;
  }
}
