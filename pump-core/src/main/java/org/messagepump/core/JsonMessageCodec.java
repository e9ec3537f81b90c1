package org.messagepump.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.io.IOException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/** The stock {@link MessageCodec}: JSON through Jackson, type names from {@link MessageTypes}. */
public final class JsonMessageCodec implements MessageCodec {

  private final MessageTypes types;
  private final ObjectMapper mapper;
  // One reader per class: it keeps the class's deserializer, which mapper.readValue looks up on
  // every call (measured: decoding was a quarter of a no-op command delivery's Java time).
  private final Map<Class<?>, ObjectReader> readers = new ConcurrentHashMap<>();

  private JsonMessageCodec(MessageTypes types, ObjectMapper mapper) {
    this.types = Objects.requireNonNull(types, "types");
    this.mapper = Objects.requireNonNull(mapper, "mapper");
  }

  /**
   * A codec with a default mapper: Java time support, dates as ISO strings, unknown properties
   * rejected (a payload that does not match its class is undecodable, not silently half-read).
   */
  public static JsonMessageCodec of(MessageTypes types) {
    ObjectMapper mapper =
        new ObjectMapper()
            .registerModule(new JavaTimeModule())
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    return new JsonMessageCodec(types, mapper);
  }

  /** A codec with the caller's mapper. */
  public static JsonMessageCodec of(MessageTypes types, ObjectMapper mapper) {
    return new JsonMessageCodec(types, mapper);
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
    } catch (JsonProcessingException e) {
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
    try {
      Object value = readers.computeIfAbsent(c, mapper::readerFor).readValue(payload);
      if (value == null) {
        throw new UndecodableMessageException("payload of type '" + type + "' is JSON null", null);
      }
      return value;
    } catch (IOException e) {
      String detail =
          e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
      throw new UndecodableMessageException(
          "payload of type '"
              + type
              + "' ("
              + payload.length
              + " bytes) does not decode into "
              + c.getName(),
          detail,
          e);
    }
  }
}
