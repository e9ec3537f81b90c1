package org.messagepump.balancer;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.core.spi.GaugeReading;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Meters.Timer;

/**
 * The {@code messagepump.balancer.*} meters of one group. Gauges read the database, at most once
 * per {@link #GAUGE_REFRESH} per group (a scrape never runs more than one query).
 */
final class BalancerMetrics {

  /** How long gauge readings are reused. */
  static final Duration GAUGE_REFRESH = Duration.ofSeconds(5);

  private final Meters meters;
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

  /** Meters for {@code group} in {@code meters} (none kept when it is null). */
  BalancerMetrics(Meters meters, String group, Supplier<GroupStats> stats) {
    this.meters = meters != null ? meters : Meters.none();
    this.group = group;
    this.endToEnd =
        this.meters.timer(
            "messagepump.balancer.end_to_end.duration",
            "From stored to removed (Ok or confirm), by the database clock",
            "group",
            group);
    this.acquire = storageTimer("acquire");
    if (meters != null) {
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
    meters.gauge(name, description, null, () -> value.applyAsDouble(reading.get()), "group", group);
  }

  /** Records how long a storage operation took. */
  void storage(String operation, long nanos) {
    storage.computeIfAbsent(operation, this::storageTimer).record(nanos);
  }

  /** Records how long an acquisition took (the storage operation {@code acquire}). */
  void acquired(long nanos) {
    acquire.record(nanos);
  }

  private Timer storageTimer(String operation) {
    return meters.timer(
        "messagepump.balancer.storage.duration",
        "Time of balancer storage operations",
        "group",
        group,
        "operation",
        operation);
  }

  /** The result tag of a handler that threw. */
  static final String EXCEPTION = "exception";

  /** The result tag of a handler that threw {@link org.messagepump.core.BusyException}. */
  static final String BUSY = "busy";

  /** The result tag of a handler that returned no result. */
  static final String FAILED = "failed";

  /** The result tag of a message that could not be read. */
  static final String UNDECODABLE = "undecodable";

  /**
   * Records a handler's duration and result ({@link #BUSY}, {@link #EXCEPTION}, {@link #FAILED},
   * {@link #UNDECODABLE}).
   */
  void handled(String result, long nanos) {
    handled.computeIfAbsent(result, this::handledTimer).record(nanos);
  }

  /** Records a handler's duration and result (tagged with the result's type). */
  void handled(Result result, long nanos) {
    handledByResult.get(result.getClass()).record(nanos);
  }

  private Timer handledTimer(String result) {
    return meters.timer(
        "messagepump.balancer.handler.duration",
        "Time the balanced handler ran, by result",
        "group",
        group,
        "result",
        result.toLowerCase(Locale.ROOT));
  }

  /** Records the end-to-end age of a removed message. */
  void removed(Duration age) {
    if (age != null) {
      endToEnd.record(age.toNanos());
    }
  }

  /** Counts a lease operation by result. */
  void leaseOperation(String operation, String result) {
    meters
        .counter(
            "messagepump.balancer.lease.operations",
            "Confirm, extend and requeue of hand-offs by result",
            "group",
            group,
            "operation",
            operation,
            "result",
            result.toLowerCase(Locale.ROOT))
        .increment();
  }

  /** Counts leases the reaper ended. */
  void leasesExpired(int n) {
    meters
        .counter(
            "messagepump.balancer.leases.expired",
            "Hand-off leases that expired and were reaped",
            "group",
            group)
        .increment(n);
  }
}
