package org.messagepump.balancer.internal;

/**
 * What a lease operation ({@link LeaseQueries#confirm confirm}, {@link LeaseQueries#extend extend},
 * {@link LeaseQueries#requeue requeue}) did; the public package reports it as its {@code
 * LeaseResult} of the same name.
 */
public enum LeaseOutcome {
  /** The lease matched and the operation was applied. */
  APPLIED,
  /** The message exists but is not leased with this token: nothing was changed. */
  STALE_TOKEN,
  /** No such message: nothing was changed. */
  UNKNOWN_MESSAGE
}
