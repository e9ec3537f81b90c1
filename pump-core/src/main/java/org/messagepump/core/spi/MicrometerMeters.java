package org.messagepump.core.spi;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import java.util.function.ToDoubleFunction;

/**
 * {@link Meters} in a Micrometer {@link MeterRegistry}. The one class of pump-core that uses
 * Micrometer: it is loaded only when an application hands a builder its registry, so Micrometer is
 * needed on the class path only then.
 */
public final class MicrometerMeters implements Meters {

  private final MeterRegistry registry;

  private MicrometerMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  /**
   * Meters registered in {@code registry}.
   *
   * @throws IllegalArgumentException when {@code registry} is null
   */
  public static Meters of(MeterRegistry registry) {
    if (registry == null) {
      throw new IllegalArgumentException("registry must not be null");
    }
    return new MicrometerMeters(registry);
  }

  /** The registry the meters go to. */
  public MeterRegistry registry() {
    return registry;
  }

  @Override
  public Counter counter(String name, String description, String... tags) {
    io.micrometer.core.instrument.Counter c =
        io.micrometer.core.instrument.Counter.builder(name)
            .description(description)
            .tags(tags)
            .register(registry);
    return new Counter() {
      @Override
      public void increment() {
        c.increment();
      }

      @Override
      public void increment(double amount) {
        c.increment(amount);
      }
    };
  }

  @Override
  public Timer timer(String name, String description, String... tags) {
    io.micrometer.core.instrument.Timer t =
        io.micrometer.core.instrument.Timer.builder(name)
            .description(description)
            .tags(tags)
            .register(registry);
    return nanos -> t.record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public <T> void gauge(
      String name, String description, T state, ToDoubleFunction<T> value, String... tags) {
    Gauge.builder(name, state, value).description(description).tags(tags).register(registry);
  }

  @Override
  public void gauge(
      String name, String description, String baseUnit, DoubleSupplier value, String... tags) {
    Gauge.builder(name, value, DoubleSupplier::getAsDouble)
        .strongReference(true)
        .description(description)
        .baseUnit(baseUnit)
        .tags(tags)
        .register(registry);
  }
}
