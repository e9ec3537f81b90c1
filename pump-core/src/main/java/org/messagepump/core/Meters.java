package org.messagepump.core;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;

/**
 * The one policy for "no meter registry": every component registers its meters all the same, in a
 * private composite registry with no children, where they record nothing and cost next to nothing.
 * No null checks around meters, and no meter lands in Micrometer's global registry by surprise.
 */
public final class Meters {

  private Meters() {}

  /** {@code registry}, or a private registry that records nothing when it is null. */
  public static MeterRegistry orNoop(MeterRegistry registry) {
    return registry != null ? registry : new CompositeMeterRegistry();
  }
}
