package org.messagepump.balancer.model;

/**
 * What became of a {@code confirm}, {@code extendLease} or {@code requeue} of a handed-off message.
 */
public enum LeaseResult {
  /** The lease matched and the operation was applied. */
  APPLIED,
  /**
   * The message exists but is not leased with this token (its lease expired and it was handed off
   * again, or it was requeued): nothing was changed.
   */
  STALE_TOKEN,
  /** No such message (already confirmed, or never stored): nothing was changed. */
  UNKNOWN_MESSAGE
}
