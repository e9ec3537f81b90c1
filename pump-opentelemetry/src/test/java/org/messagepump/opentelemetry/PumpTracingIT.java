package org.messagepump.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.junit5.OpenTelemetryExtension;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerDriver;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.QueueDepth;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;

/** Trace context from enqueue to handler, through the pump's real poll path (PumpTester). */
@ExtendWith(PostgresExtension.class)
class PumpTracingIT {

  @RegisterExtension static final OpenTelemetryExtension otel = OpenTelemetryExtension.create();

  private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

  private CommandQueue queue;
  private DataSource ds;

  @BeforeEach
  void setUp(DataSource ds) {
    this.ds = ds;
    CommandOperations.of(ds).migrate();
    queue = CommandQueue.create(ds, JsonMessageCodec.of(MessageTypes.builder().build()));
  }

  @Test
  void theHandlerRunsInAConsumerSpanOfTheProducersTrace() {
    PumpTracing tracing = PumpTracing.create(otel.getOpenTelemetry());
    Span producer = otel.getOpenTelemetry().getTracer("test").spanBuilder("checkout").startSpan();
    String messageId;
    try (Scope s = producer.makeCurrent()) {
      Map<String, String> headers = tracing.withTraceHeaders(Map.of("tenant", "acme"));
      assertThat(headers).containsKeys("traceparent", "tenant");
      messageId =
          queue
              .enqueueRaw(
                  "billing.Charge",
                  BODY,
                  EnqueueOptions.defaults().withHeaders(headers).withCorrelationId("order-7"))
              .messageId()
              .toString();
    } finally {
      producer.end();
    }
    AtomicReference<String> traceInHandler = new AtomicReference<>();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "billing.Charge",
                (b, ctx) -> traceInHandler.set(Span.current().getSpanContext().getTraceId()))
            .build();
    List<PumpTester.Result> r =
        PumpTester.builder(ds, queue.driver(handlers))
            .interceptor(tracing.interceptor())
            .build()
            .runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.HANDLED);

    String traceId = producer.getSpanContext().getTraceId();
    assertThat(traceInHandler.get()).isEqualTo(traceId); // the span is current in the handler
    SpanData consumer =
        otel.getSpans().stream().filter(s -> s.getKind() == SpanKind.CONSUMER).findFirst().get();
    assertThat(consumer.getName()).isEqualTo("process billing.Charge");
    assertThat(consumer.getTraceId()).isEqualTo(traceId);
    assertThat(consumer.getParentSpanId()).isEqualTo(producer.getSpanContext().getSpanId());
    assertThat(consumer.getLinks())
        .extracting(l -> l.getSpanContext().getSpanId())
        .containsExactly(producer.getSpanContext().getSpanId());
    assertThat(consumer.getAttributes().get(TracingInterceptor.SYSTEM)).isEqualTo("messagepump");
    assertThat(consumer.getAttributes().get(TracingInterceptor.OPERATION_TYPE))
        .isEqualTo("process");
    assertThat(consumer.getAttributes().get(TracingInterceptor.DESTINATION))
        .isEqualTo("billing.Charge");
    assertThat(consumer.getAttributes().get(TracingInterceptor.MESSAGE_ID)).isEqualTo(messageId);
    assertThat(consumer.getAttributes().get(TracingInterceptor.CONVERSATION_ID))
        .isEqualTo("order-7");
    assertThat(consumer.getAttributes().get(TracingInterceptor.ATTEMPT)).isEqualTo(1L);
    assertThat(consumer.getStatus().getStatusCode()).isNotEqualTo(StatusCode.ERROR);
  }

  @Test
  void aLeasedCommandRunsInAConsumerSpanWithNoTransactionAndItsOutcomeIsRecorded() {
    // Lease mode hands the driver no transaction (tx is null): the span is produced all the same,
    // current in the handler, and the fenced completion still deletes the command.
    PumpTracing tracing = PumpTracing.create(otel.getOpenTelemetry());
    Span producer = otel.getOpenTelemetry().getTracer("test").spanBuilder("export").startSpan();
    String messageId;
    try (Scope s = producer.makeCurrent()) {
      messageId =
          queue
              .enqueueRaw(
                  "reports.Export",
                  BODY,
                  EnqueueOptions.defaults().withHeaders(tracing.withTraceHeaders(Map.of())))
              .messageId()
              .toString();
    } finally {
      producer.end();
    }
    AtomicReference<String> traceInHandler = new AtomicReference<>();
    AtomicReference<Long> token = new AtomicReference<>();
    AtomicReference<Throwable> txRefusal = new AtomicReference<>();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "reports.Export",
                (b, ctx) -> {
                  traceInHandler.set(Span.current().getSpanContext().getTraceId());
                  token.set(ctx.fencingToken().orElseThrow());
                  try {
                    ctx.tx();
                  } catch (IllegalStateException e) {
                    txRefusal.set(e);
                  }
                })
            .build();
    List<PumpTester.Result> r =
        PumpTester.builder(
                ds,
                queue.driver(
                    handlers, CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30))))
            .interceptor(tracing.interceptor())
            .build()
            .runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.HANDLED);
    assertThat(txRefusal.get()).as("lease mode has no delivery transaction").isNotNull();
    assertThat(token.get()).isPositive();
    assertThat(traceInHandler.get()).isEqualTo(producer.getSpanContext().getTraceId());
    SpanData consumer = consumerSpanOf(messageId);
    assertThat(consumer.getName()).isEqualTo("process reports.Export");
    assertThat(consumer.getParentSpanId()).isEqualTo(producer.getSpanContext().getSpanId());
    assertThat(consumer.getAttributes().get(TracingInterceptor.OUTCOME)).isEqualTo("handled");
    assertThat(consumer.getStatus().getStatusCode()).isNotEqualTo(StatusCode.ERROR);
    QueueDepth.TypeDepth left = queue.operations().depth().of("reports.Export");
    assertThat(left.due() + left.delayed() + left.deadLetters())
        .as("completed and deleted")
        .isZero();
  }

  @Test
  void aBalancerDeliveryIsLinkedToTheStoresContextThroughItsProperties() {
    BalancerOperations.of(ds).migrate();
    MessageBalancer balancer = MessageBalancer.create(ds, "traced-group");
    PumpTracing tracing = PumpTracing.create(otel.getOpenTelemetry());
    Span producer = otel.getOpenTelemetry().getTracer("test").spanBuilder("ingest").startSpan();
    long traced;
    try (Scope s = producer.makeCurrent()) {
      // The producer's context as top-level string properties, with properties of its own.
      traced =
          balancer.storeMessage("k1", BODY, tracing.withTraceHeaders(Map.of("tenant", "acme")));
    } finally {
      producer.end();
    }
    long untraced = balancer.storeMessage("k2", BODY, Map.of("tenant", "acme"));
    Map<Long, String> traceInHandler = new java.util.concurrent.ConcurrentHashMap<>();
    Map<Long, Object> tenant = new java.util.concurrent.ConcurrentHashMap<>();
    var driver =
        balancer.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      traceInHandler.put(m.id(), Span.current().getSpanContext().getTraceId());
                      tenant.put(m.id(), m.properties().get("tenant"));
                      return Result.ok();
                    })
                .build());
    PumpTester tester =
        PumpTester.builder(ds, driver).interceptor(tracing.interceptor()).batchSize(10).build();
    assertThat(tester.drainUntilIdle())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.HANDLED, PumpTester.Kind.HANDLED);

    String traceId = producer.getSpanContext().getTraceId();
    assertThat(traceInHandler.get(traced)).isEqualTo(traceId);
    assertThat(tenant).containsEntry(traced, "acme").containsEntry(untraced, "acme");
    SpanData linked = consumerSpanOf(Long.toString(traced));
    assertThat(linked.getName()).isEqualTo("process " + BalancerDriver.MESSAGE_TYPE);
    assertThat(linked.getTraceId()).isEqualTo(traceId);
    assertThat(linked.getParentSpanId()).isEqualTo(producer.getSpanContext().getSpanId());
    assertThat(linked.getLinks())
        .extracting(l -> l.getSpanContext().getSpanId())
        .containsExactly(producer.getSpanContext().getSpanId());
    SpanData root = consumerSpanOf(Long.toString(untraced));
    assertThat(root.getParentSpanContext().isValid()).isFalse();
    assertThat(root.getLinks()).isEmpty();
    assertThat(traceInHandler.get(untraced)).isNotEqualTo(traceId);
  }

  private SpanData consumerSpanOf(String messageId) {
    return otel.getSpans().stream()
        .filter(s -> s.getKind() == SpanKind.CONSUMER)
        .filter(s -> messageId.equals(s.getAttributes().get(TracingInterceptor.MESSAGE_ID)))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void aFailureIsRecordedOnItsSpanWithTheAttempt() {
    PumpTracing tracing = PumpTracing.create(otel.getOpenTelemetry());
    queue.enqueueRaw("billing.Refund", BODY, EnqueueOptions.defaults());
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "billing.Refund",
                (b, ctx) -> {
                  throw new IllegalStateException("refund rejected");
                })
            .build();
    PumpTester tester =
        PumpTester.builder(ds, queue.driver(handlers))
            .interceptor(tracing.interceptor())
            .maxFailures(2)
            .backoff(Duration.ofNanos(1_000), Duration.ofNanos(1_000))
            .build();
    assertThat(tester.drainUntilIdle())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.FAILED, PumpTester.Kind.PARKED);
    List<SpanData> spans =
        otel.getSpans().stream().filter(s -> s.getName().equals("process billing.Refund")).toList();
    assertThat(spans).hasSize(2);
    assertThat(spans)
        .extracting(s -> s.getAttributes().get(TracingInterceptor.ATTEMPT))
        .containsExactly(1L, 2L);
    for (SpanData s : spans) {
      assertThat(s.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
      assertThat(s.getEvents()).anyMatch(e -> e.getName().equals("exception"));
      assertThat(s.getParentSpanContext().isValid()).isFalse(); // no producer context: a root
    }
  }

  @Test
  void aHandlerTimeoutIsATimeoutOnTheConsumerSpanWhateverTheHandlerReturned() {
    PumpTracing tracing = PumpTracing.create(otel.getOpenTelemetry());
    String messageId =
        queue.enqueueRaw("reports.Render", BODY, EnqueueOptions.defaults()).messageId().toString();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .onRaw(
                "reports.Render",
                (b, ctx) -> {
                  try {
                    Thread.sleep(30_000); // interrupted by the timeout
                  } catch (InterruptedException e) {
                    // swallowed: the handler returns normally all the same
                  }
                })
            .build();
    List<PumpTester.Result> r =
        PumpTester.builder(ds, queue.driver(handlers))
            .interceptor(tracing.interceptor("reports"))
            .handlerTimeout(Duration.ofMillis(200))
            .build()
            .runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.FAILED);
    assertThat(r.get(0).cause()).isInstanceOf(HandlerTimeoutException.class);
    SpanData consumer = consumerSpanOf(messageId);
    assertThat(consumer.getAttributes().get(TracingInterceptor.ERROR_TYPE)).isEqualTo("timeout");
    assertThat(consumer.getAttributes().get(TracingInterceptor.OUTCOME)).isEqualTo("failed");
    assertThat(consumer.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(consumer.getEvents()).anyMatch(e -> e.getName().equals("exception"));
  }
}
