package org.messagepump.console.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class MicrometerReadingsTest {

  @Test
  void aPumpsDeliveriesAreSummedOverItsMessageTypes() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    count(registry, "orders", "PlaceOrder", "handled", 3);
    count(registry, "orders", "CancelOrder", "handled", 4);
    count(registry, "orders", "CancelOrder", "parked", 1);
    count(registry, "mail", "SendMail", "handled", 5);

    assertThat(MicrometerReadings.of(registry).deliveries())
        .containsExactlyInAnyOrder(
            new MeterReadings.Deliveries("orders", "handled", 7),
            new MeterReadings.Deliveries("orders", "parked", 1),
            new MeterReadings.Deliveries("mail", "handled", 5));
  }

  private static void count(
      SimpleMeterRegistry registry, String pump, String type, String outcome, int n) {
    registry
        .counter("messagepump.deliveries", "pump", pump, "type", type, "outcome", outcome)
        .increment(n);
  }
}
