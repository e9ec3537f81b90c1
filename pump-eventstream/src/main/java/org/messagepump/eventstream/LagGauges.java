package org.messagepump.eventstream;

import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import org.messagepump.core.spi.GaugeReading;
import org.messagepump.core.spi.Meters;
import org.messagepump.eventstream.internal.LagQueries;

/**
 * The {@code messagepump.eventstream.lag*} gauges of a store's handlers: per handler, the events it
 * has not read, the streams it lags on, the streams parked for it, and the age of the oldest event
 * it has not read. Every gauge of every handler reads one snapshot of {@link
 * EventOperations#lagSummaries() the lag summaries} (one round of queries for all handlers, whose
 * cost grows with the streams that may lag, not with every stream), taken at most once per {@link
 * #REFRESH} when a gauge is read: none while nobody reads the meters.
 *
 * <p>A handler gets its gauges when its driver is built with a meter registry.
 */
final class LagGauges {

  /** How long one snapshot serves every gauge. */
  static final Duration REFRESH = Duration.ofSeconds(10);

  private static final LagQueries.Summary NONE = new LagQueries.Summary("", 0, 0, 0, 0, 0);

  private final String schema;
  private final GaugeReading<Map<String, LagQueries.Summary>> reading;

  LagGauges(String schema, Supplier<java.util.List<LagQueries.Summary>> read) {
    this.schema = schema;
    this.reading =
        GaugeReading.of(
            "event store " + schema + ": the lag gauges",
            REFRESH,
            Map.of(),
            () ->
                read.get().stream()
                    .collect(Collectors.toUnmodifiableMap(LagQueries.Summary::handlerKey, s -> s)));
  }

  /** Registers the gauges of {@code handlerKey} in {@code meters}. */
  void track(String handlerKey, Meters meters) {
    gauge(
        meters,
        handlerKey,
        "messagepump.eventstream.lag",
        "Events not read yet",
        null,
        s -> s.lag());
    gauge(
        meters,
        handlerKey,
        "messagepump.eventstream.lag.streams",
        "Streams with events not read yet",
        null,
        s -> s.laggingStreams());
    gauge(
        meters,
        handlerKey,
        "messagepump.eventstream.parked.streams",
        "Streams parked for the handler",
        null,
        s -> s.parkedStreams());
    gauge(
        meters,
        handlerKey,
        "messagepump.eventstream.lag.age",
        "Age of the oldest event not read yet (0 when none)",
        "seconds",
        s -> s.oldestSeconds());
  }

  private void gauge(
      Meters meters,
      String handlerKey,
      String name,
      String description,
      String unit,
      ToDoubleFunction<LagQueries.Summary> value) {
    meters.gauge(
        name,
        description,
        unit,
        () -> value.applyAsDouble(snapshot().getOrDefault(handlerKey, NONE)),
        "schema",
        schema,
        "handler",
        handlerKey);
  }

  /** The last snapshot, taken again when older than {@link #REFRESH} ({@link GaugeReading}). */
  private Map<String, LagQueries.Summary> snapshot() {
    return reading.get();
  }
}
