package org.messagepump.core;

/**
 * A stored message cannot be decoded: its payload does not fit its registered class (bad JSON,
 * wrong shape), or its stored envelope (headers, metadata) cannot be read. The delivery fails and
 * is parked at {@code maxFailures}, like any other failure.
 *
 * <p>The message names the problem without quoting stored data; the parser's own words, which may
 * quote the payload, are kept apart in {@link #detail()}: stored with the dead letter as part of
 * its reason, logged at DEBUG only.
 */
public class UndecodableMessageException extends PumpException {

  private final String detail;

  /** An exception naming the type and what was wrong (no stored data in {@code message}). */
  public UndecodableMessageException(String message, Throwable cause) {
    this(message, null, cause);
  }

  /**
   * As {@link #UndecodableMessageException(String, Throwable)}, with the parser's detail, which may
   * quote stored data.
   */
  public UndecodableMessageException(String message, String detail, Throwable cause) {
    super(message, cause);
    this.detail = detail;
  }

  /** The parser's own description (may quote the payload), or null. */
  public String detail() {
    return detail;
  }
}
