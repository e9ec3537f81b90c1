package org.messagepump.spring.boot3;

import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.engine.PumpHealth;
import org.messagepump.spring.boot.MessagePumpAutoConfiguration;
import org.messagepump.spring.boot.MessagePumpRegistry;
import org.springframework.boot.actuate.health.CompositeHealthContributor;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The Spring Boot 3 Actuator health contributor of the pumps of {@link
 * MessagePumpAutoConfiguration}: one health indicator per pump, under {@code messagepump}. UP while
 * the pump runs, DOWN while its acquisition fails (with since when and the last error),
 * OUT_OF_SERVICE while it is stopped. The same contributor as on Boot 4, on Boot 3's health API.
 */
@AutoConfiguration(after = MessagePumpAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
@ConditionalOnBean(MessagePumpRegistry.class)
@ConditionalOnBooleanProperty(name = "messagepump.enabled", matchIfMissing = true)
public class MessagePumpHealthAutoConfiguration {

  /** Declared by the application's auto-configuration; not for direct use. */
  public MessagePumpHealthAutoConfiguration() {}

  @Bean
  @ConditionalOnMissingBean(name = "messagepumpHealthContributor")
  CompositeHealthContributor messagepumpHealthContributor(MessagePumpRegistry registry) {
    Map<String, HealthIndicator> indicators = new LinkedHashMap<>();
    for (String name : registry.names()) {
      indicators.put(name, () -> health(registry.pump(name).health()));
    }
    return CompositeHealthContributor.fromMap(indicators);
  }

  static Health health(PumpHealth h) {
    if (h.state() == PumpHealth.State.STOPPED) {
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
