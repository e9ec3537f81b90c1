package org.messagepump.core.engine;

import org.messagepump.core.spi.Delivery;

/**
 * One transactional batch's state while it runs: whether its connection was lost, and the delivery
 * at fault (with why) when it is abandoned.
 */
final class BatchState {
  Delivery culprit;
  Throwable culpritCause;
  boolean connectionLost;
  Throwable lastCause; // the failure recorded last, for PumpTester's observers

  /** The batch is abandoned because of {@code d}, whose failure is then counted afresh. */
  void blame(Delivery d, Throwable cause) {
    culprit = d;
    culpritCause = cause;
  }
}
