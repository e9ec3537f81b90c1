package org.messagepump.core;

import java.time.Duration;

/**
 * The cause recorded for a delivery whose handler ran past its timeout: the pump interrupted the
 * handler and aborted its connection, so the delivery's transaction was rolled back on the server,
 * and counted the delivery as failed.
 */
public class HandlerTimeoutException extends PumpException {

  /** A timeout after {@code timeout}. */
  public HandlerTimeoutException(Duration timeout) {
    super(
        "the handler ran past its timeout of "
            + timeout
            + "; it was interrupted and its connection aborted (nothing it wrote commits)");
  }
}
