package org.messagepump.core.engine;

/**
 * What one poll came to: the one result that goes from the batch ({@link DeliveryRunner}) through
 * the poll ({@link Poller}) to the dispatcher ({@link Dispatcher}) and {@link PumpTester}.
 */
enum PollResult {
  /** Nothing was due (or the poll did not run); the empty transaction committed. */
  NOTHING,
  /** A batch was handled and committed: every delivery moved forward. */
  COMMITTED,
  /** The pump's connection was lost (or the pump is stopping); the deliveries come back. */
  CONNECTION_LOST,
  /** Rolled back; the delivery at fault got its failure counted. */
  ABANDONED,
  /**
   * Rolled back with the delivery at fault unknown: as many polls as the batch had deliveries take
   * one delivery each, so the one that cannot be committed fails alone.
   */
  ABANDONED_ISOLATE;

  /** True when the batch was rolled back: the worker backs off before its next poll. */
  boolean rolledBack() {
    return this == CONNECTION_LOST || this == ABANDONED || this == ABANDONED_ISOLATE;
  }
}
