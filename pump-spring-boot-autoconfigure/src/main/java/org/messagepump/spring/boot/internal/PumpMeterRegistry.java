package org.messagepump.spring.boot.internal;

/**
 * How the auto-configuration hands the application's Micrometer {@code MeterRegistry} to the pumps,
 * the drivers and the console. A bean only with micrometer-core on the class path (Spring Boot's
 * Actuator brings it), which is an optional dependency: this interface names no Micrometer type, so
 * that the beans that take it load without Micrometer; {@link MicrometerPumpMeterRegistry}
 * implements it.
 */
public interface PumpMeterRegistry {

  /**
   * Calls {@code builder.meterRegistry(registry)} with the application's registry when it has one
   * (a single one, or a primary one); does nothing otherwise. {@code builder} is one of
   * messagepump's builders that take a {@code MeterRegistry} (the pump's, the command queue's, the
   * event store's, the balancer's, the console's).
   *
   * @throws IllegalArgumentException when {@code builder} has no such method
   */
  void applyTo(Object builder);
}
