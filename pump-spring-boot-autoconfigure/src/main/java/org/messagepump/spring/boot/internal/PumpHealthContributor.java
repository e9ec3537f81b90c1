package org.messagepump.spring.boot.internal;

import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpHealth;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * One health indicator per pump, under {@code messagepump}: UP while it runs, DOWN while its
 * acquisition fails (with since when and the last error), OUT_OF_SERVICE while it is stopped.
 */
public final class PumpHealthContributor {

  private PumpHealthContributor() {}

  /** The composite contributor of {@code pumps}' pumps. */
  public static CompositeHealthContributor of(MessagePumps pumps) {
    Map<String, HealthIndicator> indicators = new LinkedHashMap<>();
    for (String name : pumps.names()) {
      indicators.put(name, () -> health(pumps.pumps().get(name)));
    }
    return CompositeHealthContributor.fromMap(indicators);
  }

  static Health health(MessagePump pump) {
    PumpHealth h = pump == null ? null : pump.health();
    if (h == null || h.state() == PumpHealth.State.STOPPED) {
      return Health.outOfService().withDetail("state", "STOPPED").build();
    }
    if (h.state() == PumpHealth.State.DEGRADED) {
      return Health.down()
          .withDetail("state", "DEGRADED")
          .withDetail("degradedSince", h.degradedSince().toString())
          .withDetail("lastError", String.valueOf(h.lastError()))
          .build();
    }
    return Health.up().withDetail("state", h.state().name()).build();
  }
}
