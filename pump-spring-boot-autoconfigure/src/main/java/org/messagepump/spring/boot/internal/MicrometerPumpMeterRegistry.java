package org.messagepump.spring.boot.internal;

import io.micrometer.core.instrument.MeterRegistry;
import java.lang.reflect.Method;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.util.ReflectionUtils;

/**
 * {@link PumpMeterRegistry} of the application's {@link MeterRegistry} beans. Declared only when
 * micrometer-core is on the class path. The builders are reached through their public {@code
 * meterRegistry(MeterRegistry)} method rather than by type: the drivers' and the console's modules
 * are optional, and this bean's class must load without them.
 */
public final class MicrometerPumpMeterRegistry implements PumpMeterRegistry {

  private final ObjectProvider<MeterRegistry> registries;

  /** The registry {@code registries} resolves to when it is unique or primary. */
  public MicrometerPumpMeterRegistry(ObjectProvider<MeterRegistry> registries) {
    this.registries = registries;
  }

  @Override
  public void applyTo(Object builder) {
    Method setter =
        ReflectionUtils.findMethod(builder.getClass(), "meterRegistry", MeterRegistry.class);
    if (setter == null) {
      throw new IllegalArgumentException(
          builder.getClass().getName() + " has no meterRegistry(MeterRegistry) method");
    }
    MeterRegistry registry = registries.getIfUnique();
    if (registry != null) {
      ReflectionUtils.invokeMethod(setter, builder, registry);
    }
  }
}
