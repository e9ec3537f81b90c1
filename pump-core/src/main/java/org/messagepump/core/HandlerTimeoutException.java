package org.messagepump.core;

import java.time.Duration;

/**
 * The cause recorded for a delivery whose handler ran past its timeout: the pump interrupted the
 * handler and cancelled its statement, rolled back what it wrote, and counted the delivery as
 * failed in the delivery's own transaction.
 */
public class HandlerTimeoutException extends PumpException {

  /** A timeout after {@code timeout}. */
  public HandlerTimeoutException(Duration timeout) {
    super(
        "the handler ran past its timeout of "
            + timeout
            + "; it was interrupted and its statement cancelled (nothing it wrote commits)");
  }
}
