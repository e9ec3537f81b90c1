package org.messagepump.core.spi;

import java.util.Objects;

/**
 * Which work a pump may acquire now, asked by a driver while it acquires: for the command queue the
 * key is the message type. A wrapper (a circuit breaker, a bulkhead, a pause) hands one to {@link
 * Driver#acquire(org.messagepump.core.Tx, int, AcquisitionGate)} so that work it would refuse is
 * not taken out of the table at all, instead of being acquired and postponed.
 *
 * <p>Asked on every poll, on a worker thread: it must be quick and must not block.
 */
@FunctionalInterface
public interface AcquisitionGate {

  /** Admits everything. */
  AcquisitionGate ALL = key -> true;

  /** True when work of {@code key} may be acquired now. */
  boolean admits(String key);

  /** A gate admitting what both this and {@code other} admit. */
  default AcquisitionGate and(AcquisitionGate other) {
    Objects.requireNonNull(other, "other");
    if (this == ALL) {
      return other;
    }
    if (other == ALL) {
      return this;
    }
    return key -> admits(key) && other.admits(key);
  }
}
