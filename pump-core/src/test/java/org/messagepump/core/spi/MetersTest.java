package org.messagepump.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The meter facade registers what Micrometer's builders would, and {@code none()} nothing. */
class MetersTest {

  @Test
  void countersAndTimersAreRegisteredOnceWithTheirNameTagsAndDescription() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Meters meters = MicrometerMeters.of(registry);
    Meters.Counter a = meters.counter("test.count", "Things counted", "k", "v", "pump", "p");
    Meters.Counter b = meters.counter("test.count", "Things counted", "k", "v", "pump", "p");
    a.increment();
    b.increment(2.5);
    io.micrometer.core.instrument.Counter c =
        registry.get("test.count").tags("k", "v", "pump", "p").counter();
    assertThat(c.count()).isEqualTo(3.5);
    assertThat(c.getId().getDescription()).isEqualTo("Things counted");

    meters.timer("test.time", null, "k", "v").record(TimeUnit.MILLISECONDS.toNanos(7));
    io.micrometer.core.instrument.Timer t = registry.get("test.time").tag("k", "v").timer();
    assertThat(t.count()).isEqualTo(1);
    assertThat(t.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(7.0);
    assertThat(t.getId().getDescription()).isNull();
    assertThat(registry.getMeters()).hasSize(2);
  }

  @Test
  void gaugesReadTheirStateWeaklyOrTheirSupplierStronglyWithTheBaseUnit() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Meters meters = MicrometerMeters.of(registry);
    AtomicInteger state = new AtomicInteger(4);
    meters.gauge("test.state", "A state", state, AtomicInteger::get, "pump", "p");
    meters.gauge("test.age", "An age", "seconds", () -> 12.5, "schema", "s");
    Gauge weak = registry.get("test.state").tag("pump", "p").gauge();
    assertThat(weak.value()).isEqualTo(4.0);
    state.set(5);
    assertThat(weak.value()).isEqualTo(5.0);
    Gauge strong = registry.get("test.age").tag("schema", "s").gauge();
    assertThat(strong.value()).isEqualTo(12.5);
    assertThat(strong.getId().getBaseUnit()).isEqualTo("seconds");
    assertThat(strong.getId().getDescription()).isEqualTo("An age");
    assertThat(strong.getId().getType()).isEqualTo(Meter.Type.GAUGE);
    assertThat(weak.getId().getBaseUnit()).isNull();
  }

  @Test
  void noneRecordsNothingAndARegistryIsRequired() {
    Meters none = Meters.none();
    none.counter("test.count", "d", "k", "v").increment();
    none.timer("test.time", "d").record(1);
    none.gauge("test.state", "d", new AtomicInteger(), AtomicInteger::get);
    none.gauge("test.age", "d", "seconds", () -> 1.0);
    assertThat(Meters.none()).isSameAs(none);
    assertThatThrownBy(() -> MicrometerMeters.of(null))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
