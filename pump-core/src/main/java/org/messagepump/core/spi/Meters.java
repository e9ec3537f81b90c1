package org.messagepump.core.spi;

import java.util.function.DoubleSupplier;
import java.util.function.ToDoubleFunction;

/**
 * Where the pump and the drivers record their meters: a Micrometer {@code MeterRegistry} ({@link
 * MicrometerMeters#of}) or nowhere ({@link #none()}).
 *
 * <p>The facade exists because Micrometer ({@code micrometer-core}) is an optional dependency: the
 * components record through this interface, which names no Micrometer type, so an application
 * without Micrometer on its class path loads no Micrometer class and records no meters. Only {@link
 * MicrometerMeters}, made when the application hands a builder its registry, touches Micrometer.
 * The meters are registered as Micrometer's builders register them: same names, tags and
 * descriptions, and registering a meter again returns the one already registered.
 *
 * <p>Tags are given as key-value pairs ({@code "pump", name, "driver", driver}); a description may
 * be null.
 */
public interface Meters {

  /** A monotonically increasing count. */
  interface Counter {

    /** Adds one. */
    void increment();

    /** Adds {@code amount}. */
    void increment(double amount);
  }

  /** Durations of one kind of event. */
  interface Timer {

    /** Records one event that took {@code nanos} nanoseconds. */
    void record(long nanos);
  }

  /** Meters that record nothing; no Micrometer object is made. */
  static Meters none() {
    return NoMeters.INSTANCE;
  }

  /** The counter {@code name} with {@code tags} (pairs), registered at the first call. */
  Counter counter(String name, String description, String... tags);

  /** The timer {@code name} with {@code tags} (pairs), registered at the first call. */
  Timer timer(String name, String description, String... tags);

  /**
   * Registers the gauge {@code name}, reading {@code value} of {@code state}. As with Micrometer's
   * {@code Gauge.builder(name, state, value)}, {@code state} is referenced weakly: the gauge reads
   * NaN once nothing else holds it.
   */
  <T> void gauge(
      String name, String description, T state, ToDoubleFunction<T> value, String... tags);

  /**
   * Registers the gauge {@code name}, reading {@code value}, which it holds strongly; {@code
   * baseUnit} (such as {@code "seconds"}) may be null.
   */
  void gauge(
      String name, String description, String baseUnit, DoubleSupplier value, String... tags);
}
