package org.messagepump.core;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The pump's Micrometer meters, all named {@code messagepump.*} and tagged pump + driver. */
final class PumpMetrics {

  /** Outcome tag values of {@code messagepump.deliveries}. */
  enum Result {
    HANDLED,
    BUSY,
    FAILED,
    PARKED,
    /** The transaction was lost (connection gone, commit failed); the delivery comes back. */
    ABANDONED;

    final String tag = name().toLowerCase(java.util.Locale.ROOT);
  }

  private final Counter[] deliveries = new Counter[Result.values().length];
  private final Timer handleDuration;
  private final Timer acquireDuration;
  private final Counter acquisitionErrors;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final MeterRegistry registry;
  private final String pump;
  private final String driver;
  private volatile LeaseMeters leaseMeters;

  /** The meters of lease mode, registered only by a pump whose driver has one. */
  record LeaseMeters(Counter heartbeats, Counter extended, Counter lost) {}

  PumpMetrics(MeterRegistry registry, String pump, String driver) {
    MeterRegistry r = Meters.orNoop(registry);
    this.registry = r;
    this.pump = pump;
    this.driver = driver;
    for (Result result : Result.values()) {
      deliveries[result.ordinal()] =
          Counter.builder("messagepump.deliveries")
              .description("Deliveries by outcome, counted when their transaction ended")
              .tags("pump", pump, "driver", driver, "outcome", result.tag)
              .register(r);
    }
    handleDuration =
        Timer.builder("messagepump.handle.duration")
            .description("Time a driver spent handling one delivery")
            .tags("pump", pump, "driver", driver)
            .register(r);
    acquireDuration =
        Timer.builder("messagepump.acquire.duration")
            .description("Time one acquisition (a poll) took, found or not")
            .tags("pump", pump, "driver", driver)
            .register(r);
    acquisitionErrors =
        Counter.builder("messagepump.acquisition.errors")
            .description("Polls that failed (database unreachable, driver error)")
            .tags("pump", pump, "driver", driver)
            .register(r);
    Gauge.builder("messagepump.inflight", inFlight, AtomicInteger::get)
        .description("Deliveries being handled now")
        .tags("pump", pump, "driver", driver)
        .register(r);
  }

  /** Lease mode's meters, registered at the first call. */
  LeaseMeters leases() {
    LeaseMeters m = leaseMeters;
    if (m == null) {
      synchronized (this) {
        if (leaseMeters == null) {
          leaseMeters =
              new LeaseMeters(
                  counter(
                      "messagepump.leases.heartbeats",
                      "Heartbeat transactions that extended the leases of running deliveries"),
                  counter(
                      "messagepump.leases.extended", "Leases extended, one per delivery per beat"),
                  counter(
                      "messagepump.leases.lost",
                      "Deliveries whose lease another claim took: their completion was refused"));
        }
        m = leaseMeters;
      }
    }
    return m;
  }

  private Counter counter(String name, String description) {
    return Counter.builder(name)
        .description(description)
        .tags("pump", pump, "driver", driver)
        .register(registry);
  }

  void delivered(Result result, int count) {
    deliveries[result.ordinal()].increment(count);
  }

  void handled(long nanos) {
    handleDuration.record(nanos, TimeUnit.NANOSECONDS);
  }

  void acquired(long nanos) {
    acquireDuration.record(nanos, TimeUnit.NANOSECONDS);
  }

  void acquisitionFailed() {
    acquisitionErrors.increment();
  }

  void inFlight(int delta) {
    inFlight.addAndGet(delta);
  }
}
