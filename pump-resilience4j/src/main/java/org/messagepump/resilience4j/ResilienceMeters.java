package org.messagepump.resilience4j;

import io.github.resilience4j.bulkhead.BulkheadRegistry;
import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.micrometer.tagged.TaggedBulkheadMetrics;
import io.github.resilience4j.micrometer.tagged.TaggedCircuitBreakerMetrics;
import io.github.resilience4j.micrometer.tagged.TaggedRateLimiterMetrics;
import io.github.resilience4j.ratelimiter.RateLimiterRegistry;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Resilience4j's tagged meters in a Micrometer registry. Micrometer and resilience4j-micrometer are
 * optional dependencies: this class, the only one here that uses them, is loaded only when the
 * application hands {@link ResilientDriver.Builder#meterRegistry} a registry.
 */
final class ResilienceMeters {

  private final MeterRegistry registry;

  ResilienceMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  /** Binds the meters of the breakers, rate limiters and bulkheads of these registries. */
  void bindTo(
      CircuitBreakerRegistry breakers, RateLimiterRegistry limiters, BulkheadRegistry bulkheads) {
    TaggedCircuitBreakerMetrics.ofCircuitBreakerRegistry(breakers).bindTo(registry);
    TaggedRateLimiterMetrics.ofRateLimiterRegistry(limiters).bindTo(registry);
    TaggedBulkheadMetrics.ofBulkheadRegistry(bulkheads).bindTo(registry);
  }
}
