package org.messagepump.core.engine;

import java.util.concurrent.atomic.AtomicInteger;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.Meters.Counter;
import org.messagepump.core.spi.Meters.Timer;

/**
 * The pump's meters ({@link Meters}), all named {@code messagepump.*} and tagged pump + driver; the
 * deliveries and handling times also by message type. A type's meters are registered at its first
 * delivery; at most {@link #MAX_TYPE_TAGS} types get their own (type names are tag values), the
 * others share the tag value {@value #OTHER_TYPE}, announced by one warning.
 */
final class PumpMetrics {

  /** Most message types with meters of their own, per pump. */
  static final int MAX_TYPE_TAGS = 100;

  /** The type tag of the deliveries past {@link #MAX_TYPE_TAGS} types. */
  static final String OTHER_TYPE = "other";

  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(PumpMetrics.class);

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

  private final java.util.concurrent.ConcurrentHashMap<String, TypeMeters> byType =
      new java.util.concurrent.ConcurrentHashMap<>();
  private volatile TypeMeters other;
  private final Timer acquireDuration;
  private final Counter acquisitionErrors;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Meters meters;
  private final String pump;
  private final String driver;
  private volatile LeaseMeters leaseMeters;

  /** The meters of lease mode, registered only by a pump whose driver has one. */
  record LeaseMeters(Counter heartbeats, Counter extended, Counter lost) {}

  /** The meters of one message type: deliveries by outcome and handling time. */
  private record TypeMeters(Counter[] deliveries, Timer handle) {}

  /** The meters of {@code pump} in {@code meters}; {@link Meters#none()} when it is null. */
  PumpMetrics(Meters meters, String pump, String driver) {
    Meters m = meters != null ? meters : Meters.none();
    this.meters = m;
    this.pump = pump;
    this.driver = driver;
    acquireDuration =
        m.timer(
            "messagepump.acquire.duration",
            "Time one acquisition (a poll) took, found or not",
            "pump",
            pump,
            "driver",
            driver);
    acquisitionErrors =
        m.counter(
            "messagepump.acquisition.errors",
            "Polls that failed (database unreachable, driver error)",
            "pump",
            pump,
            "driver",
            driver);
    m.gauge(
        "messagepump.inflight",
        "Deliveries being handled now",
        inFlight,
        AtomicInteger::get,
        "pump",
        pump,
        "driver",
        driver);
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
    return meters.counter(name, description, "pump", pump, "driver", driver);
  }

  void delivered(String type, Result result) {
    of(type).deliveries[result.ordinal()].increment();
  }

  void handled(String type, long nanos) {
    of(type).handle.record(nanos);
  }

  private TypeMeters of(String type) {
    String key = type == null ? "" : type;
    TypeMeters m = byType.get(key);
    if (m != null) {
      return m;
    }
    TypeMeters shared = other;
    if (shared != null && byType.size() >= MAX_TYPE_TAGS) {
      return shared; // past the cap: no lock per delivery of a type without meters of its own
    }
    synchronized (byType) {
      m = byType.get(key);
      if (m != null) {
        return m;
      }
      if (byType.size() < MAX_TYPE_TAGS) {
        m = register(key);
        byType.put(key, m);
        return m;
      }
      if (other == null) {
        log.warn(
            "{}: more than {} message types; the deliveries of {} and of every further type are"
                + " counted under type={}",
            pump,
            MAX_TYPE_TAGS,
            key,
            OTHER_TYPE);
        other = register(OTHER_TYPE);
      }
      return other;
    }
  }

  private TypeMeters register(String type) {
    Counter[] deliveries = new Counter[Result.values().length];
    for (Result result : Result.values()) {
      deliveries[result.ordinal()] =
          meters.counter(
              "messagepump.deliveries",
              "Deliveries by outcome, counted when their transaction ended",
              "pump",
              pump,
              "driver",
              driver,
              "type",
              type,
              "outcome",
              result.tag);
    }
    Timer handle =
        meters.timer(
            "messagepump.handle.duration",
            "Time a driver spent handling one delivery",
            "pump",
            pump,
            "driver",
            driver,
            "type",
            type);
    return new TypeMeters(deliveries, handle);
  }

  void acquired(long nanos) {
    acquireDuration.record(nanos);
  }

  void acquisitionFailed() {
    acquisitionErrors.increment();
  }

  void inFlight(int delta) {
    inFlight.addAndGet(delta);
  }
}
