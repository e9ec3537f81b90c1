package org.messagepump.opentelemetry;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapPropagator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.ProducerHook;

/**
 * One {@code PRODUCER} span per write, named {@code "send <destination>"} ({@code "send"} when the
 * messages of a batch have different types), a child of the current context; its own context is
 * what the messages carry, so the consumer span of each message is its child.
 */
final class TracingProducerHook implements ProducerHook {

  static final AttributeKey<Long> BATCH_COUNT =
      AttributeKey.longKey("messaging.batch.message_count");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

  private final Tracer tracer;
  private final TextMapPropagator propagator;

  TracingProducerHook(Tracer tracer, TextMapPropagator propagator) {
    this.tracer = tracer;
    this.propagator = propagator;
  }

  @Override
  public Send beforeSend(Outgoing outgoing) {
    String destination = outgoing.destination();
    SpanBuilder builder =
        tracer
            .spanBuilder(destination == null ? "send" : "send " + destination)
            .setSpanKind(SpanKind.PRODUCER)
            .setAttribute(TracingInterceptor.SYSTEM, PumpTracing.MESSAGING_SYSTEM)
            .setAttribute(TracingInterceptor.OPERATION_TYPE, "send")
            .setAttribute(TracingInterceptor.OPERATION_NAME, "send")
            .setAttribute(TracingInterceptor.DRIVER, outgoing.driver());
    if (destination != null) {
      builder.setAttribute(TracingInterceptor.DESTINATION, destination);
    }
    if (outgoing.messageCount() > 1) {
      builder.setAttribute(BATCH_COUNT, (long) outgoing.messageCount());
    }
    if (outgoing.messageId() != null) {
      builder.setAttribute(TracingInterceptor.MESSAGE_ID, outgoing.messageId());
    }
    Span span = builder.startSpan();
    Map<String, String> headers = new LinkedHashMap<>();
    propagator.inject(
        Context.current().with(span), headers, (carrier, key, value) -> carrier.put(key, value));
    return new SpanSend(span, headers, outgoing.messageId() == null);
  }

  private record SpanSend(Span span, Map<String, String> headers, boolean idUnknown)
      implements Send {

    @Override
    public void sent(String messageId) {
      if (idUnknown && messageId != null) {
        span.setAttribute(TracingInterceptor.MESSAGE_ID, messageId);
      }
      span.end();
    }

    @Override
    public void failed(Throwable failure) {
      span.recordException(failure);
      span.setAttribute(ERROR_TYPE, failure.getClass().getName());
      span.setStatus(StatusCode.ERROR, failure.getClass().getSimpleName());
      span.end();
    }
  }
}
