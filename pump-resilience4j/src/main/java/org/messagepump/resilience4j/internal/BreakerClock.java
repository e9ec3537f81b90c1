package org.messagepump.resilience4j.internal;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What a pump needs of a circuit breaker beyond Resilience4j's own API: whether work may be
 * acquired for it now, and how long an open breaker has left. Resilience4j does not expose the
 * remaining wait of an open breaker, so the time it opened is taken from its state-transition
 * events and its configured wait (the interval function's first interval) added.
 */
public final class BreakerClock {

  private final CircuitBreaker breaker;
  private final AtomicLong openedAtNanos = new AtomicLong(System.nanoTime());
  private final AtomicInteger inFlight = new AtomicInteger();
  private final long waitNanos;

  /** Tracks {@code breaker}'s openings. */
  public BreakerClock(CircuitBreaker breaker) {
    this.breaker = breaker;
    this.waitNanos =
        Duration.ofMillis(
                breaker.getCircuitBreakerConfig().getWaitIntervalFunctionInOpenState().apply(1))
            .toNanos();
    breaker
        .getEventPublisher()
        .onStateTransition(
            e -> {
              if (e.getStateTransition().getToState() == CircuitBreaker.State.OPEN
                  || e.getStateTransition().getToState() == CircuitBreaker.State.FORCED_OPEN) {
                openedAtNanos.set(System.nanoTime());
              }
            });
  }

  /** The breaker. */
  public CircuitBreaker breaker() {
    return breaker;
  }

  /**
   * True when work may be acquired for this breaker now: closed; open but its wait is over (the
   * next call moves it to half-open); half-open with fewer calls in flight than it permits.
   */
  public boolean admits() {
    switch (breaker.getState()) {
      case OPEN:
        return remaining().isZero();
      case FORCED_OPEN:
        return false;
      case HALF_OPEN:
        return inFlight.get()
            < breaker.getCircuitBreakerConfig().getPermittedNumberOfCallsInHalfOpenState();
      default:
        return true;
    }
  }

  /** The remaining wait of an open breaker (zero when closed or the wait is over). */
  public Duration remaining() {
    CircuitBreaker.State s = breaker.getState();
    if (s != CircuitBreaker.State.OPEN && s != CircuitBreaker.State.FORCED_OPEN) {
      return Duration.ZERO;
    }
    long left = openedAtNanos.get() + waitNanos - System.nanoTime();
    return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
  }

  /** A permitted call starts. */
  public void started() {
    inFlight.incrementAndGet();
  }

  /** A permitted call ended. */
  public void ended() {
    inFlight.decrementAndGet();
  }
}
