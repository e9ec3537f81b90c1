package org.messagepump.opentelemetry;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.ProducerHook;
import org.messagepump.core.spi.HandlerInterceptor;

/**
 * OpenTelemetry tracing for pumps, built on {@code opentelemetry-api} only (bring your own SDK or
 * agent), following the OpenTelemetry messaging semantic conventions with {@code messaging.system}
 * = {@value #MESSAGING_SYSTEM}.
 *
 * <ul>
 *   <li><b>Producer side:</b> {@link #producerHook()}, registered once on the builders of the
 *       command queue, the event store and the partition groups ({@code producerHook(...)}), runs
 *       every enqueue, append and store in a {@code PRODUCER} span ({@code "send <type>"}, or
 *       {@code "send <group>"} for the balancer), a child of the current span, and injects that
 *       span's context into the messages' headers through the OpenTelemetry instance's propagators
 *       (W3C {@code traceparent}, {@code tracestate}); headers set by the caller win. {@link
 *       #traceHeaders()} gives the current context as headers, for producers without the hook.
 *   <li><b>Consumer side:</b> {@link #interceptor(String)}, registered on the pump's builder
 *       ({@code interceptor(...)}), runs every delivery in a {@code CONSUMER} span ({@code "process
 *       <type>"}), parented on and linked to the producer's context found in the headers, with the
 *       consumer group, the attempt, the outcome as the pump decided it and, when the delivery did
 *       not complete, {@code error.type} ({@code timeout} for a handler that ran past its handler
 *       timeout, {@code busy}, or the exception's class name); the span is current while the
 *       handler runs, so what the handler enqueues or appends joins the same trace.
 * </ul>
 *
 * <pre>{@code
 * PumpTracing tracing = PumpTracing.create(openTelemetry);
 * CommandQueue queue = CommandQueue.builder(dataSource).codec(codec)
 *     .producerHook(tracing.producerHook()).build();
 * queue.enqueue(new ChargeCard(...)); // traced, context injected
 * MessagePump pump = MessagePump.builder(dataSource).name("billing")
 *     .driver(queue.driver(handlers))
 *     .interceptor(tracing.interceptor("billing"))
 *     .build();
 * }</pre>
 */
public final class PumpTracing {

  /** The instrumentation scope name of the tracer. */
  public static final String INSTRUMENTATION_NAME = "org.messagepump";

  /**
   * The {@code messaging.system} of every span: the semantic conventions list no PostgreSQL-backed
   * queue, so the value names this library (a custom value, as the conventions allow).
   */
  public static final String MESSAGING_SYSTEM = "messagepump";

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
  private final ProducerHook producerHook;

  private PumpTracing(OpenTelemetry openTelemetry) {
    this.propagator = openTelemetry.getPropagators().getTextMapPropagator();
    this.tracer = openTelemetry.getTracer(INSTRUMENTATION_NAME);
    this.producerHook = new TracingProducerHook(tracer, propagator);
  }

  /**
   * Tracing through {@code openTelemetry} (its tracer provider and text-map propagators).
   *
   * @throws IllegalArgumentException when {@code openTelemetry} is null
   */
  public static PumpTracing create(OpenTelemetry openTelemetry) {
    if (openTelemetry == null) {
      throw new IllegalArgumentException("openTelemetry must not be null");
    }
    return new PumpTracing(openTelemetry);
  }

  /**
   * The producer hook to register with {@code producerHook(...)} on {@code CommandQueue.Builder},
   * {@code EventStore.Builder} and {@code MessageBalancer.Builder}: each write gets a {@code
   * PRODUCER} span ({@code messaging.operation.type} {@code send}, the destination, the message id
   * when the write holds one message, {@code messaging.batch.message_count} for a batch, {@code
   * error.type} when it fails) whose context is injected into the messages' headers.
   */
  public ProducerHook producerHook() {
    return producerHook;
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

  /**
   * The pump interceptor that runs each delivery in a consumer span whose {@code
   * messaging.consumer.group.name} is the delivery's partition group (balancer deliveries) or else
   * the driver's name; prefer {@link #interceptor(String)} with the pump's name.
   */
  public HandlerInterceptor interceptor() {
    return new TracingInterceptor(tracer, this, null);
  }

  /**
   * The pump interceptor that runs each delivery in a consumer span whose {@code
   * messaging.consumer.group.name} is {@code consumerGroup}: the pump's name, an event handler's
   * key, a balancer's group. Register it on {@code MessagePump.Builder.interceptor(...)} (or a
   * {@code PumpTester}'s); put it first to have the span cover the other interceptors.
   *
   * @throws IllegalArgumentException when {@code consumerGroup} is blank
   */
  public HandlerInterceptor interceptor(String consumerGroup) {
    if (consumerGroup == null || consumerGroup.isBlank()) {
      throw new IllegalArgumentException("consumerGroup must not be blank");
    }
    return new TracingInterceptor(tracer, this, consumerGroup);
  }

  /** The producer's context carried in {@code headers} (the root context when there is none). */
  Context extract(Map<String, String> headers) {
    return propagator.extract(Context.root(), headers, GETTER);
  }
}
