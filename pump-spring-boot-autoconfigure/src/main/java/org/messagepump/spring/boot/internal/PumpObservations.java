package org.messagepump.spring.boot.internal;

import org.messagepump.core.ProducerHook;
import org.messagepump.core.spi.Driver;

/**
 * What the auto-configuration traces with, when tracing is on: the producer hook it registers on
 * the command queue, the event store and the partition groups, and the wrapper of each pump's
 * driver. Free of Micrometer types, so that the beans that take it load without Micrometer; {@link
 * ObservationPumpObservations} implements it with Micrometer's Observation API.
 */
public interface PumpObservations {

  /** The hook observing every enqueue, append and store. */
  ProducerHook producerHook();

  /** {@code driver} with each delivery observed, for the pump {@code pumpName}. */
  Driver wrap(Driver driver, String pumpName);
}
