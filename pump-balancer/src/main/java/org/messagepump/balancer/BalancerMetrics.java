package org.messagepump.balancer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.messagepump.core.GaugeReading;
import org.messagepump.core.Meters;

/**
 * The {@code messagepump.balancer.*} meters of one group. Gauges read the database, at most once
 * per {@link #GAUGE_REFRESH} per group (a scrape never runs more than one query).
 */
final class BalancerMetrics {

  /** How long gauge readings are reused. */
  static final Duration GAUGE_REFRESH = Duration.ofSeconds(5);

  private final MeterRegistry registry;
  private final String group;
  private final Timer endToEnd;
  private final Timer acquire;
  // Timers built once per tag value and reused: building and registering a timer per call (a
  // Tags object, a registry look-up under its map) was a visible part of a delivery's CPU time.
  private final Map<String, Timer> storage = new ConcurrentHashMap<>();
  private final Map<String, Timer> handled = new ConcurrentHashMap<>();
  private final ClassValue<Timer> handledByResult =
      new ClassValue<>() {
        @Override
        protected Timer computeValue(Class<?> type) {
          return handledTimer(type.getSimpleName());
        }
      };
  private GaugeReading<GroupStats> reading;

  /** Meters for {@code group} in {@code registry} (none kept when it is null). */
  BalancerMetrics(MeterRegistry registry, String group, Supplier<GroupStats> stats) {
    this.registry = Meters.orNoop(registry);
    this.group = group;
    this.endToEnd =
        Timer.builder("messagepump.balancer.end_to_end.duration")
            .description("From stored to removed (Ok or confirm), by the database clock")
            .tags("group", group)
            .register(this.registry);
    this.acquire = storageTimer("acquire");
    if (registry != null) {
      reading =
          GaugeReading.of(
              "balancer " + group + ": the group gauges",
              GAUGE_REFRESH,
              new GroupStats(group, 0, 0, 0, 0, Duration.ZERO),
              stats);
      gauge("messagepump.balancer.partitions", "Keys with messages", s -> s.partitions());
      gauge("messagepump.balancer.messages", "Messages stored", s -> s.messages());
      gauge("messagepump.balancer.leases", "Keys with a hand-off lease", s -> s.leases());
      gauge("messagepump.balancer.parked", "Parked keys", s -> s.parked());
      gauge(
          "messagepump.balancer.oldest.age",
          "Age of the oldest message in seconds (the oldest of every key)",
          s -> s.oldestAge().toMillis() / 1000.0);
    }
  }

  private void gauge(
      String name, String description, java.util.function.ToDoubleFunction<GroupStats> value) {
    Gauge.builder(name, () -> value.applyAsDouble(reading.get()))
        .description(description)
        .tags("group", group)
        .register(registry);
  }

  /** Records how long a storage operation took. */
  void storage(String operation, long nanos) {
    storage.computeIfAbsent(operation, this::storageTimer).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Records how long an acquisition took (the storage operation {@code acquire}). */
  void acquired(long nanos) {
    acquire.record(nanos, TimeUnit.NANOSECONDS);
  }

  private Timer storageTimer(String operation) {
    return Timer.builder("messagepump.balancer.storage.duration")
        .description("Time of balancer storage operations")
        .tags("group", group, "operation", operation)
        .register(registry);
  }

  /** The result tag of a handler that threw. */
  static final String EXCEPTION = "exception";

  /** The result tag of a message that could not be read. */
  static final String UNDECODABLE = "undecodable";

  /** Records a handler's duration and result ({@link #EXCEPTION}, {@link #UNDECODABLE}). */
  void handled(String result, long nanos) {
    handled.computeIfAbsent(result, this::handledTimer).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Records a handler's duration and result (tagged with the result's type). */
  void handled(Result result, long nanos) {
    handledByResult.get(result.getClass()).record(nanos, TimeUnit.NANOSECONDS);
  }

  private Timer handledTimer(String result) {
    return Timer.builder("messagepump.balancer.handler.duration")
        .description("Time the balanced handler ran, by result")
        .tags("group", group, "result", result.toLowerCase(Locale.ROOT))
        .register(registry);
  }

  /** Records the end-to-end age of a removed message. */
  void removed(Duration age) {
    if (age != null) {
      endToEnd.record(age);
    }
  }

  /** Counts a lease operation by result. */
  void leaseOperation(String operation, String result) {
    Counter.builder("messagepump.balancer.lease.operations")
        .description("Confirm, extend and requeue of hand-offs by result")
        .tags("group", group, "operation", operation, "result", result.toLowerCase(Locale.ROOT))
        .register(registry)
        .increment();
  }

  /** Counts leases the reaper ended. */
  void leasesExpired(int n) {
    Counter.builder("messagepump.balancer.leases.expired")
        .description("Hand-off leases that expired and were reaped")
        .tags("group", group)
        .register(registry)
        .increment(n);
  }
}
