package org.messagepump.resilience4j;

import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.bulkhead.BulkheadRegistry;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreakerRegistry;
import io.github.resilience4j.ratelimiter.RateLimiter;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.RateLimiterRegistry;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.messagepump.core.BusyException;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.AcquisitionGate;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Outcome;
import org.messagepump.resilience4j.internal.BreakerClock;

/**
 * A driver guarded by Resilience4j: a circuit breaker for the whole pump or per message type, a
 * rate limiter and a bulkhead per message type. Each guard acts twice:
 *
 * <ul>
 *   <li><b>At acquisition</b> (through {@link AcquisitionGate}): work of a type whose breaker is
 *       open, whose bulkhead is full or whose rate limiter has no permission left is not acquired
 *       at all, so it stays in the table untouched (for the command queue: no delete and
 *       re-insert). A half-open breaker admits only as many deliveries in flight as it permits
 *       calls. Drivers that cannot filter acquisition (event streams, the balancer) still get the
 *       second check.
 *   <li><b>At handling</b>: a delivery is handled only with every guard's permission; a refusal
 *       ({@code CallNotPermittedException}, {@code RequestNotPermitted}, {@code
 *       BulkheadFullException} in Resilience4j's terms) becomes a Busy outcome whose retry-after is
 *       the breaker's remaining wait or the rate limiter's wait: postponed, no failure counted.
 * </ul>
 *
 * <p>A handler's outcome feeds its breakers: Handled is a success; Failed (or a thrown exception)
 * is an error, subject to the breaker's own record/ignore exception configuration; Busy is neither.
 *
 * <p>Deliberately not Resilience4j: the pump's own retry and backoff. A retry is a postponement
 * stored in the database, not an in-process loop, and the dispatcher's "database down" backoff has
 * one action only (poll later); see docs/reliability.md.
 *
 * <pre>{@code
 * ResilientDriver driver = ResilientDriver.builder(queue.driver(handlers))
 *     .circuitBreaker("billing.ChargeCard", CircuitBreakerConfig.custom()
 *         .failureRateThreshold(50).slidingWindowSize(10)
 *         .waitDurationInOpenState(Duration.ofSeconds(5)).build())
 *     .rateLimiter("mail.Send", RateLimiterConfig.custom()
 *         .limitForPeriod(50).limitRefreshPeriod(Duration.ofSeconds(1))
 *         .timeoutDuration(Duration.ZERO).build())
 *     .bulkhead("reports.Render", BulkheadConfig.custom().maxConcurrentCalls(2).build())
 *     .meterRegistry(registry)
 *     .build();
 * }</pre>
 */
public final class ResilientDriver extends ForwardingDriver {

  /** The key of the pump-wide breaker in {@link #circuitBreaker(String)}. */
  public static final String PUMP = "*";

  private final BreakerClock pumpBreaker;
  private final Map<String, BreakerClock> breakers;
  private final Map<String, RateLimiter> limiters;
  private final Map<String, Bulkhead> bulkheads;
  private final AcquisitionGate gate = this::admits;

  private ResilientDriver(Builder b) {
    super(b.driver);
    this.pumpBreaker = b.pumpBreaker;
    this.breakers = Map.copyOf(b.breakers);
    this.limiters = Map.copyOf(b.limiters);
    this.bulkheads = Map.copyOf(b.bulkheads);
  }

  /** A builder guarding {@code driver}. */
  public static Builder builder(Driver driver) {
    return new Builder(Objects.requireNonNull(driver, "driver"));
  }

  /** The breaker of a message type, or of the pump for {@link #PUMP}. */
  public Optional<CircuitBreaker> circuitBreaker(String key) {
    BreakerClock c = PUMP.equals(key) ? pumpBreaker : breakers.get(key);
    return Optional.ofNullable(c).map(BreakerClock::breaker);
  }

  /** The rate limiter of a message type. */
  public Optional<RateLimiter> rateLimiter(String type) {
    return Optional.ofNullable(limiters.get(type));
  }

  /** The bulkhead of a message type. */
  public Optional<Bulkhead> bulkhead(String type) {
    return Optional.ofNullable(bulkheads.get(type));
  }

  /** Whether work of {@code type} may be acquired now; asked on every poll, never blocks. */
  boolean admits(String type) {
    if (pumpBreaker != null && !pumpBreaker.admits()) {
      return false;
    }
    BreakerClock b = breakers.get(type);
    if (b != null && !b.admits()) {
      return false;
    }
    Bulkhead h = bulkheads.get(type);
    if (h != null && h.getMetrics().getAvailableConcurrentCalls() <= 0) {
      return false;
    }
    RateLimiter l = limiters.get(type);
    return l == null || l.getMetrics().getAvailablePermissions() > 0;
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max) throws SQLException {
    if (pumpBreaker != null && !pumpBreaker.admits()) {
      return List.of(); // nothing at all while the pump's breaker is open
    }
    return delegate().acquire(tx, max, gate);
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max, AcquisitionGate outer) throws SQLException {
    if (pumpBreaker != null && !pumpBreaker.admits()) {
      return List.of();
    }
    return delegate().acquire(tx, max, outer.and(gate));
  }

  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    String type = delivery.messageType();
    Bulkhead bulkhead = bulkheads.get(type);
    if (bulkhead != null && !bulkhead.tryAcquirePermission()) {
      return new Outcome.Busy("bulkhead of " + type + " is full", null);
    }
    try {
      RateLimiter limiter = limiters.get(type);
      if (limiter != null && !limiter.acquirePermission()) {
        return Outcome.busy("rate limit of " + type + " reached", waitOf(limiter));
      }
      List<BreakerClock> permitted = new ArrayList<>(2);
      for (BreakerClock b : new BreakerClock[] {pumpBreaker, breakers.get(type)}) {
        if (b == null) {
          continue;
        }
        if (!b.breaker().tryAcquirePermission()) {
          release(permitted);
          return Outcome.busy(
              "circuit breaker " + b.breaker().getName() + " is " + b.breaker().getState(),
              b.remaining());
        }
        permitted.add(b);
      }
      permitted.forEach(BreakerClock::started);
      try {
        return handlePermitted(tx, delivery, permitted);
      } finally {
        permitted.forEach(BreakerClock::ended);
      }
    } finally {
      if (bulkhead != null) {
        bulkhead.onComplete();
      }
    }
  }

  /** Handles with every breaker's permission and reports the outcome to them. */
  private Outcome handlePermitted(Tx tx, Delivery delivery, List<BreakerClock> permitted)
      throws Exception {
    long start = System.nanoTime();
    Outcome outcome;
    try {
      outcome = super.handle(tx, delivery);
    } catch (BusyException e) {
      release(permitted);
      throw e;
    } catch (Exception | Error e) {
      long took = System.nanoTime() - start;
      for (BreakerClock b : permitted) {
        b.breaker().onError(took, TimeUnit.NANOSECONDS, e);
      }
      throw e;
    }
    long took = System.nanoTime() - start;
    for (BreakerClock b : permitted) {
      if (outcome instanceof Outcome.Failed f) {
        b.breaker().onError(took, TimeUnit.NANOSECONDS, f.cause());
      } else if (outcome instanceof Outcome.Handled) {
        b.breaker().onSuccess(took, TimeUnit.NANOSECONDS);
      } else {
        b.breaker().releasePermission(); // Busy: neither success nor error
      }
    }
    return outcome;
  }

  private static void release(List<BreakerClock> permitted) {
    for (BreakerClock b : permitted) {
      b.breaker().releasePermission();
    }
  }

  /** The rate limiter's wait until its next permission (its refresh period when unknown). */
  private static Duration waitOf(RateLimiter limiter) {
    if (limiter instanceof AtomicRateLimiter a) {
      long nanos = a.getDetailedMetrics().getNanosToWait();
      if (nanos > 0) {
        return Duration.ofNanos(nanos);
      }
    }
    return limiter.getRateLimiterConfig().getLimitRefreshPeriod();
  }

  /**
   * Builds a {@link ResilientDriver}. Keys are message types as the driver names them (for the
   * command queue, the command type name); each is checked like every identifier ({@link
   * IllegalArgumentException} when empty, with NUL, or too long).
   */
  public static final class Builder {
    private final Driver driver;
    private final CircuitBreakerRegistry breakerRegistry = CircuitBreakerRegistry.ofDefaults();
    private final RateLimiterRegistry limiterRegistry = RateLimiterRegistry.ofDefaults();
    private final BulkheadRegistry bulkheadRegistry = BulkheadRegistry.ofDefaults();
    private BreakerClock pumpBreaker;
    private final Map<String, BreakerClock> breakers = new HashMap<>();
    private final Map<String, RateLimiter> limiters = new HashMap<>();
    private final Map<String, Bulkhead> bulkheads = new HashMap<>();
    private ResilienceMeters meters;

    private Builder(Driver driver) {
      this.driver = driver;
    }

    private String prefix() {
      return driver.name() + ":";
    }

    /** One breaker for every delivery of the pump: while open, the pump acquires nothing. */
    public Builder circuitBreaker(CircuitBreakerConfig config) {
      Objects.requireNonNull(config, "config");
      this.pumpBreaker = new BreakerClock(breakerRegistry.circuitBreaker(prefix() + PUMP, config));
      return this;
    }

    /** A breaker for one message type: while open, that type is not acquired. */
    public Builder circuitBreaker(String type, CircuitBreakerConfig config) {
      Inputs.key("type", type);
      Objects.requireNonNull(config, "config");
      breakers.put(type, new BreakerClock(breakerRegistry.circuitBreaker(prefix() + type, config)));
      return this;
    }

    /**
     * A rate limiter for one message type. Use a {@code timeoutDuration} of zero: a worker must not
     * wait for a permission while it holds a transaction; a refused delivery is Busy with the
     * limiter's wait instead.
     */
    public Builder rateLimiter(String type, RateLimiterConfig config) {
      Inputs.key("type", type);
      Objects.requireNonNull(config, "config");
      if (!config.getTimeoutDuration().isZero()) {
        throw new IllegalArgumentException(
            "rate limiter of "
                + type
                + ": timeoutDuration must be zero (a worker would wait holding a transaction): "
                + config.getTimeoutDuration());
      }
      limiters.put(type, limiterRegistry.rateLimiter(prefix() + type, config));
      return this;
    }

    /**
     * A bulkhead for one message type: at most {@code maxConcurrentCalls} of its deliveries are
     * handled at once, so a slow type cannot hold every worker. Its {@code maxWaitDuration} must be
     * zero, for the same reason as a rate limiter's timeout.
     */
    public Builder bulkhead(String type, BulkheadConfig config) {
      Inputs.key("type", type);
      Objects.requireNonNull(config, "config");
      if (!config.getMaxWaitDuration().isZero()) {
        throw new IllegalArgumentException(
            "bulkhead of "
                + type
                + ": maxWaitDuration must be zero (a worker would wait holding a transaction): "
                + config.getMaxWaitDuration());
      }
      bulkheads.put(type, bulkheadRegistry.bulkhead(prefix() + type, config));
      return this;
    }

    /**
     * Where Resilience4j's own meters go (resilience4j-micrometer): the pump's registry. Needs
     * micrometer-core and resilience4j-micrometer on the class path, both optional dependencies.
     */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meters = new ResilienceMeters(Objects.requireNonNull(meterRegistry, "meterRegistry"));
      return this;
    }

    /** The guarded driver. */
    public ResilientDriver build() {
      if (meters != null) {
        meters.bindTo(breakerRegistry, limiterRegistry, bulkheadRegistry);
      }
      return new ResilientDriver(this);
    }
  }
}
