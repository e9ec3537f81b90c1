package org.messagepump.eventstream;

/** How many deliveries of one handler may run at once, across every process. */
public enum Concurrency {
  /**
   * One delivery at a time across the cluster: each delivery holds a transaction-scoped advisory
   * lock on the handler key.
   */
  MINIMAL,
  /** Streams in parallel (one delivery per stream at a time, so order within a stream is kept). */
  MAXIMAL
}
