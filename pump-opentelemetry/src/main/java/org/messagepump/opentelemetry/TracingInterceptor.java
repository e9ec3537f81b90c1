package org.messagepump.opentelemetry;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Outcome;

/**
 * The pump interceptor that runs each delivery in a {@code CONSUMER} span named {@code "process
 * <type>"}, current while the handler runs and ended with the outcome as the pump decided it.
 * Attribute names follow the OpenTelemetry messaging semantic conventions; written as plain keys
 * because the semantic-conventions artifact is not part of {@code opentelemetry-api}. A delivery
 * that did not complete has {@code error.type}: {@value #TIMEOUT} for a handler that ran past its
 * timeout, {@code busy} for a delivery that met contention (retried without counting a failure),
 * else the exception's class name.
 */
final class TracingInterceptor implements HandlerInterceptor {

  static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> OPERATION_TYPE =
      AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> OPERATION_NAME =
      AttributeKey.stringKey("messaging.operation.name");
  static final AttributeKey<String> DESTINATION =
      AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> CONVERSATION_ID =
      AttributeKey.stringKey("messaging.message.conversation_id");
  static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("messagepump.delivery.attempt");
  static final AttributeKey<String> DRIVER = AttributeKey.stringKey("messagepump.driver");
  static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("messagepump.outcome");
  static final AttributeKey<String> CONSUMER_GROUP =
      AttributeKey.stringKey("messaging.consumer.group.name");
  static final AttributeKey<String> ERROR_TYPE = TracingProducerHook.ERROR_TYPE;

  /** The {@code error.type} of a delivery whose handler ran past its timeout. */
  static final String TIMEOUT = "timeout";

  /** The envelope header of a balancer delivery naming its partition group. */
  static final String PARTITION_GROUP_HEADER = "partitionGroup";

  private final Tracer tracer;
  private final PumpTracing tracing;
  private final String consumerGroup;

  TracingInterceptor(Tracer tracer, PumpTracing tracing, String consumerGroup) {
    this.tracer = tracer;
    this.tracing = tracing;
    this.consumerGroup = consumerGroup;
  }

  private String consumerGroup(Handling handling) {
    if (consumerGroup != null) {
      return consumerGroup;
    }
    String group = handling.delivery().envelope().headers().get(PARTITION_GROUP_HEADER);
    return group != null ? group : handling.driverName();
  }

  @Override
  public Outcome intercept(Handling handling) {
    Delivery delivery = handling.delivery();
    Context producer = tracing.extract(delivery.envelope().headers());
    SpanContext link = Span.fromContext(producer).getSpanContext();
    var builder =
        tracer
            .spanBuilder("process " + delivery.messageType())
            .setSpanKind(SpanKind.CONSUMER)
            .setParent(producer)
            .setAttribute(SYSTEM, PumpTracing.MESSAGING_SYSTEM)
            .setAttribute(CONSUMER_GROUP, consumerGroup(handling))
            .setAttribute(OPERATION_TYPE, "process")
            .setAttribute(OPERATION_NAME, "process")
            .setAttribute(DESTINATION, delivery.messageType())
            .setAttribute(MESSAGE_ID, delivery.messageId())
            .setAttribute(ATTEMPT, (long) delivery.attempt())
            .setAttribute(DRIVER, handling.driverName());
    if (delivery.envelope().correlationId() != null) {
      builder.setAttribute(CONVERSATION_ID, delivery.envelope().correlationId());
    }
    if (link.isValid()) {
      builder.addLink(link);
    }
    Span span = builder.startSpan();
    try (Scope ignored = span.makeCurrent()) {
      Outcome outcome = handling.proceed();
      if (outcome instanceof Outcome.Failed f) {
        failed(span, f.cause());
      } else if (outcome instanceof Outcome.Busy) {
        busy(span);
      } else {
        span.setAttribute(OUTCOME, "handled");
      }
      return outcome;
    } finally {
      span.end();
    }
  }

  private static void failed(Span span, Throwable cause) {
    span.recordException(cause);
    span.setStatus(StatusCode.ERROR, cause.getClass().getSimpleName());
    span.setAttribute(
        ERROR_TYPE,
        cause instanceof HandlerTimeoutException ? TIMEOUT : cause.getClass().getName());
    span.setAttribute(OUTCOME, "failed");
  }

  private static void busy(Span span) {
    span.setStatus(StatusCode.ERROR, "busy");
    span.setAttribute(ERROR_TYPE, "busy");
    span.setAttribute(OUTCOME, "busy");
  }
}
