package org.messagepump.opentelemetry;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import org.messagepump.core.BusyException;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.core.spi.Outcome;

/**
 * Runs each delivery in a {@code CONSUMER} span named {@code "process <type>"}. Attribute names
 * follow the OpenTelemetry messaging semantic conventions; written as plain keys because the
 * semantic-conventions artifact is not part of {@code opentelemetry-api}.
 */
final class TracingDriver extends ForwardingDriver {

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

  private final Tracer tracer;
  private final PumpTracing tracing;

  TracingDriver(Driver delegate, Tracer tracer, PumpTracing tracing) {
    super(delegate);
    this.tracer = tracer;
    this.tracing = tracing;
  }

  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    Context producer = tracing.extract(delivery.envelope().headers());
    SpanContext link = Span.fromContext(producer).getSpanContext();
    var builder =
        tracer
            .spanBuilder("process " + delivery.messageType())
            .setSpanKind(SpanKind.CONSUMER)
            .setParent(producer)
            .setAttribute(SYSTEM, "messagepump")
            .setAttribute(OPERATION_TYPE, "process")
            .setAttribute(OPERATION_NAME, "process")
            .setAttribute(DESTINATION, delivery.messageType())
            .setAttribute(MESSAGE_ID, delivery.messageId())
            .setAttribute(ATTEMPT, (long) delivery.attempt())
            .setAttribute(DRIVER, name());
    if (delivery.envelope().correlationId() != null) {
      builder.setAttribute(CONVERSATION_ID, delivery.envelope().correlationId());
    }
    if (link.isValid()) {
      builder.addLink(link);
    }
    Span span = builder.startSpan();
    try (Scope ignored = span.makeCurrent()) {
      Outcome outcome = super.handle(tx, delivery);
      if (outcome instanceof Outcome.Failed f) {
        span.recordException(f.cause());
        span.setStatus(StatusCode.ERROR, f.cause().getClass().getSimpleName());
        span.setAttribute(OUTCOME, "failed");
      } else if (outcome instanceof Outcome.Busy b) {
        span.setAttribute(OUTCOME, "busy");
      } else {
        span.setAttribute(OUTCOME, "handled");
      }
      return outcome;
    } catch (BusyException e) {
      span.setAttribute(OUTCOME, "busy");
      throw e;
    } catch (Exception | Error e) {
      span.recordException(e);
      span.setStatus(StatusCode.ERROR, e.getClass().getSimpleName());
      span.setAttribute(OUTCOME, "failed");
      throw e;
    } finally {
      span.end();
    }
  }
}
