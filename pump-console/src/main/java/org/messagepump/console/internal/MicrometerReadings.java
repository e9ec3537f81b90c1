package org.messagepump.console.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.MicrometerMeters;

/** {@link MeterReadings} of a Micrometer registry: loaded only when the application gives one. */
public final class MicrometerReadings implements MeterReadings {

  private final MeterRegistry registry;
  private final Meters meters;

  private MicrometerReadings(MeterRegistry registry) {
    this.registry = registry;
    this.meters = MicrometerMeters.of(registry);
  }

  /** The readings of {@code registry}; null when it is null. */
  public static MicrometerReadings of(MeterRegistry registry) {
    return registry == null ? null : new MicrometerReadings(registry);
  }

  /** The registry read. */
  public MeterRegistry registry() {
    return registry;
  }

  /**
   * The deliveries per pump and outcome: the sum of the pump's counters of that outcome, one per
   * message type.
   */
  @Override
  public List<Deliveries> deliveries() {
    Map<List<String>, Double> sums = new LinkedHashMap<>();
    for (Counter c : registry.find("messagepump.deliveries").counters()) {
      String pump = c.getId().getTag("pump");
      String outcome = c.getId().getTag("outcome");
      if (pump != null && outcome != null) {
        sums.merge(List.of(pump, outcome), c.count(), Double::sum);
      }
    }
    List<Deliveries> found = new ArrayList<>(sums.size());
    sums.forEach((k, count) -> found.add(new Deliveries(k.get(0), k.get(1), count)));
    return found;
  }

  @Override
  public List<InFlight> inFlight() {
    List<InFlight> found = new ArrayList<>();
    for (Gauge g : registry.find("messagepump.inflight").gauges()) {
      String pump = g.getId().getTag("pump");
      if (pump != null) {
        found.add(new InFlight(pump, g.value()));
      }
    }
    return found;
  }

  @Override
  public Meters meters() {
    return meters;
  }
}
