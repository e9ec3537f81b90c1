package org.messagepump.core;

/**
 * Thrown by a user handler to say "the target is temporarily unavailable": the delivery becomes
 * {@code Busy} and is retried after the backoff base without counting a failure.
 */
public class BusyException extends PumpException {

  /** A busy signal with a reason for the logs. */
  public BusyException(String reason) {
    super(reason);
  }

  /** A busy signal with a reason and the underlying cause. */
  public BusyException(String reason, Throwable cause) {
    super(reason, cause);
  }
}
