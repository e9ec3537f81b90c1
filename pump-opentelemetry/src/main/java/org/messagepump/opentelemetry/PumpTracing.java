package org.messagepump.opentelemetry;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.messagepump.core.spi.Driver;

/**
 * OpenTelemetry tracing for pumps, built on {@code opentelemetry-api} only (bring your own SDK or
 * agent).
 *
 * <ul>
 *   <li><b>Producer side:</b> {@link #traceHeaders()} returns the current context in the W3C format
 *       ({@code traceparent}, {@code tracestate}) through the OpenTelemetry instance's propagators;
 *       add them to the message's headers when you enqueue a command ({@code
 *       EnqueueOptions.withHeaders}) or append an event ({@code EventMetadata}); {@link
 *       #withTraceHeaders(Map)} merges them into headers of your own.
 *   <li><b>Consumer side:</b> {@link #wrap(Driver)} gives a driver that runs every delivery in a
 *       {@code CONSUMER} span, parented on and linked to the producer's context found in the
 *       headers, with the messaging semantic conventions' attributes, errors recorded, and the span
 *       current while the handler runs.
 * </ul>
 *
 * <pre>{@code
 * PumpTracing tracing = PumpTracing.create(openTelemetry);
 * queue.enqueue(new ChargeCard(...), EnqueueOptions.defaults().withHeaders(tracing.traceHeaders()));
 * MessagePump pump = MessagePump.builder(dataSource).driver(tracing.wrap(queue.driver(handlers))).build();
 * }</pre>
 */
public final class PumpTracing {

  /** The instrumentation scope name of the tracer. */
  public static final String INSTRUMENTATION_NAME = "org.messagepump";

  private static final TextMapGetter<Map<String, String>> GETTER =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
          return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  private final TextMapPropagator propagator;
  private final Tracer tracer;

  private PumpTracing(OpenTelemetry openTelemetry) {
    this.propagator = openTelemetry.getPropagators().getTextMapPropagator();
    this.tracer = openTelemetry.getTracer(INSTRUMENTATION_NAME);
  }

  /** Tracing through {@code openTelemetry} (its tracer provider and text-map propagators). */
  public static PumpTracing create(OpenTelemetry openTelemetry) {
    return new PumpTracing(Objects.requireNonNull(openTelemetry, "openTelemetry"));
  }

  /**
   * The current context as headers ({@code traceparent} and, when set, {@code tracestate} with the
   * W3C propagator); empty when there is no current span.
   */
  public Map<String, String> traceHeaders() {
    Map<String, String> out = new LinkedHashMap<>();
    propagator.inject(Context.current(), out, (carrier, key, value) -> carrier.put(key, value));
    return out;
  }

  /** {@code headers} (may be null) with the current context's trace headers added. */
  public Map<String, String> withTraceHeaders(Map<String, String> headers) {
    Map<String, String> out = new LinkedHashMap<>();
    if (headers != null) {
      out.putAll(headers);
    }
    out.putAll(traceHeaders());
    return out;
  }

  /** A driver that runs each delivery of {@code driver} in a consumer span. */
  public Driver wrap(Driver driver) {
    return new TracingDriver(Objects.requireNonNull(driver, "driver"), tracer, this);
  }

  /** The producer's context carried in {@code headers} (the root context when there is none). */
  Context extract(Map<String, String> headers) {
    return propagator.extract(Context.root(), headers, GETTER);
  }
}
