package org.messagepump.core;

/**
 * Turns messages into stored bytes and back, with a stable type name per Java class. The stock
 * implementation is {@link org.messagepump.core.JsonMessageCodec}.
 */
public interface MessageCodec {

  /**
   * The stable type name of a message's class.
   *
   * @throws org.messagepump.core.UnknownMessageTypeException when the class is not registered
   */
  String typeOf(Class<?> messageClass);

  /**
   * The registered class of a type name.
   *
   * @throws org.messagepump.core.UnknownMessageTypeException when the name is not registered
   */
  Class<?> classOf(String type);

  /** Encodes a message (its class must be registered). */
  byte[] encode(Object message);

  /**
   * Decodes a payload of the given type.
   *
   * @throws org.messagepump.core.UnknownMessageTypeException when the type is not registered
   * @throws org.messagepump.core.UndecodableMessageException when the bytes do not decode
   */
  Object decode(String type, byte[] payload);
}
