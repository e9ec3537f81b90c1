package org.messagepump.core;

/** The one unchecked root of every exception this library throws. */
public class PumpException extends RuntimeException {

  /** An exception with a message. */
  public PumpException(String message) {
    super(message);
  }

  /** An exception with a message and a cause. */
  public PumpException(String message, Throwable cause) {
    super(message, cause);
  }
}
