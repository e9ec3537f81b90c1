package org.messagepump.console.internal;

import java.util.List;
import org.messagepump.core.spi.Meters;

/**
 * The pumps' meters as the console reads them, and where it records its own. The console names no
 * Micrometer type outside {@link MicrometerReadings}, the one implementation, made only when the
 * application hands the console its {@code MeterRegistry}: Micrometer is an optional dependency.
 */
public interface MeterReadings {

  /** One {@code messagepump.deliveries} counter: its pump and outcome tags and its count. */
  record Deliveries(String pump, String outcome, double count) {}

  /** One {@code messagepump.inflight} gauge: its pump tag and its value. */
  record InFlight(String pump, double value) {}

  /** The {@code messagepump.deliveries} counters that have a pump and an outcome tag. */
  List<Deliveries> deliveries();

  /** The {@code messagepump.inflight} gauges that have a pump tag. */
  List<InFlight> inFlight();

  /** Where the console records its own meters. */
  Meters meters();
}
