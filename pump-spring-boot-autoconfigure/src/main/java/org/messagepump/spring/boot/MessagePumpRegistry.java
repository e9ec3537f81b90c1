package org.messagepump.spring.boot;

import java.util.List;

/**
 * The application's pumps, by name: inject this bean to pause, resume or inspect a pump from
 * application code (an admin endpoint, a feature flag, a maintenance window). It holds every pump a
 * {@link PumpDefinition} bean declares, whether the context is running or not; with {@code
 * messagepump.enabled=false} it is empty.
 */
public interface MessagePumpRegistry {

  /** The pump names, in the order of their {@link PumpDefinition} beans. */
  List<String> names();

  /**
   * The handle of the pump named {@code name}.
   *
   * @throws IllegalArgumentException when no {@link PumpDefinition} bean declares that name
   */
  PumpHandle pump(String name);
}
