package org.messagepump.core;

/** A stored payload cannot be decoded into its registered class (bad JSON, wrong shape). */
public class UndecodableMessageException extends PumpException {

  /** An exception naming the type and what was wrong. */
  public UndecodableMessageException(String message, Throwable cause) {
    super(message, cause);
  }
}
