package org.messagepump.spring.boot.internal;

import org.messagepump.core.ProducerHook;
import org.messagepump.core.spi.HandlerInterceptor;

/**
 * What the auto-configuration traces with, when tracing is on: the producer hook it registers on
 * the command queue, the event store and the partition groups, and the interceptor of each pump's
 * deliveries. Free of Micrometer types, so that the beans that take it load without Micrometer;
 * {@link ObservationPumpObservations} implements it with Micrometer's Observation API.
 */
public interface PumpObservations {

  /** The hook observing every enqueue, append and store. */
  ProducerHook producerHook();

  /** The interceptor observing each delivery of the pump {@code pumpName}. */
  HandlerInterceptor interceptor(String pumpName);
}
