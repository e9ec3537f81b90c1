package org.messagepump.core;

/** A type name or a Java class is not registered with the {@link MessageTypes} in use. */
public class UnknownMessageTypeException extends PumpException {

  /** An exception naming the unknown type. */
  public UnknownMessageTypeException(String message) {
    super(message);
  }
}
