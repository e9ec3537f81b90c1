package org.messagepump.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.junit5.OpenTelemetryExtension;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.NewMessage;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.eventstream.OffsetConflictException;
import org.messagepump.testkit.PostgresExtension;

/**
 * The producer hook of {@link PumpTracing}: every enqueue, append and store is a PRODUCER span
 * whose context the messages carry, without code at the call sites, through the pumps' real poll
 * path.
 */
@ExtendWith(PostgresExtension.class)
class AutomaticTracingIT {

  @RegisterExtension static final OpenTelemetryExtension otel = OpenTelemetryExtension.create();

  record Charge(String order) {}

  record Charged(String order) {}

  record Receipt(String order) {}

  record Refund(String order) {}

  record Refunded(String order) {}

  private static final MessageCodec CODEC =
      JsonMessageCodec.of(
          MessageTypes.builder()
              .register(Charge.class, "billing.Charge")
              .register(Charged.class, "billing.Charged")
              .register(Receipt.class, "billing.Receipt")
              .register(Refund.class, "billing.Refund")
              .register(Refunded.class, "billing.Refunded")
              .build());

  private DataSource ds;
  private PumpTracing tracing;
  private CommandQueue queue;
  private EventStore store;

  @BeforeEach
  void setUp(DataSource ds) {
    this.ds = ds;
    CommandOperations.of(ds).migrate();
    EventOperations.of(ds).migrate();
    tracing = PumpTracing.create(otel.getOpenTelemetry());
    queue = CommandQueue.builder(ds).codec(CODEC).producerHook(tracing.producerHook()).build();
    store = EventStore.builder(ds, CODEC).producerHook(tracing.producerHook()).build();
  }

  @Test
  void oneTraceRunsFromTheRequestThroughTheCommandItsEventAndItsFollowUpCommand() {
    Map<String, String> traceInHandler = new ConcurrentHashMap<>();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Charge.class,
                (c, ctx) -> {
                  traceInHandler.put("charge", Span.current().getSpanContext().getTraceId());
                  store.append(ctx.tx(), List.of(new Charged(c.order())));
                  ctx.enqueue(new Receipt(c.order()));
                })
            .on(
                Receipt.class,
                (r, ctx) ->
                    traceInHandler.put("receipt", Span.current().getSpanContext().getTraceId()))
            .build();
    EventDriver events =
        store.driver(
            "ledger",
            EventHandlers.builder()
                .on(
                    Charged.class,
                    (e, ctx) ->
                        traceInHandler.put("charged", Span.current().getSpanContext().getTraceId()))
                .build());

    Span request =
        otel.getOpenTelemetry()
            .getTracer("test")
            .spanBuilder("POST /orders")
            .setSpanKind(SpanKind.SERVER)
            .startSpan();
    String chargeId;
    try (Scope s = request.makeCurrent()) {
      chargeId = queue.enqueue(new Charge("o-1")).messageId().toString();
    } finally {
      request.end();
    }
    PumpTester commands =
        PumpTester.builder(ds, queue.driver(handlers))
            .interceptor(tracing.interceptor("billing"))
            .build();
    assertThat(commands.drainUntilIdle())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.HANDLED, PumpTester.Kind.HANDLED);
    assertThat(
            PumpTester.builder(ds, events)
                .interceptor(tracing.interceptor("ledger"))
                .build()
                .drainUntilIdle())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.HANDLED);

    String traceId = request.getSpanContext().getTraceId();
    assertThat(traceInHandler)
        .containsEntry("charge", traceId)
        .containsEntry("charged", traceId)
        .containsEntry("receipt", traceId);
    assertThat(otel.getSpans()).allMatch(s -> s.getTraceId().equals(traceId));

    SpanData sendCharge = span("send billing.Charge");
    assertThat(sendCharge.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(sendCharge.getParentSpanId()).isEqualTo(request.getSpanContext().getSpanId());
    assertThat(sendCharge.getAttributes().get(TracingInterceptor.SYSTEM)).isEqualTo("messagepump");
    assertThat(sendCharge.getAttributes().get(TracingInterceptor.OPERATION_TYPE)).isEqualTo("send");
    assertThat(sendCharge.getAttributes().get(TracingInterceptor.DESTINATION))
        .isEqualTo("billing.Charge");
    assertThat(sendCharge.getAttributes().get(TracingInterceptor.MESSAGE_ID)).isEqualTo(chargeId);
    assertThat(sendCharge.getAttributes().get(TracingProducerHook.BATCH_COUNT)).isNull();

    SpanData processCharge = span("process billing.Charge");
    assertThat(processCharge.getParentSpanId()).isEqualTo(sendCharge.getSpanId());
    assertThat(processCharge.getAttributes().get(TracingInterceptor.CONSUMER_GROUP))
        .isEqualTo("billing");
    assertThat(processCharge.getAttributes().get(TracingInterceptor.ERROR_TYPE)).isNull();

    SpanData sendCharged = span("send billing.Charged");
    assertThat(sendCharged.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(sendCharged.getParentSpanId()).isEqualTo(processCharge.getSpanId());
    assertThat(sendCharged.getAttributes().get(TracingInterceptor.DRIVER)).isEqualTo("eventstream");
    SpanData processCharged = span("process billing.Charged");
    assertThat(processCharged.getParentSpanId()).isEqualTo(sendCharged.getSpanId());
    assertThat(processCharged.getAttributes().get(TracingInterceptor.CONSUMER_GROUP))
        .isEqualTo("ledger");

    SpanData sendReceipt = span("send billing.Receipt");
    assertThat(sendReceipt.getParentSpanId()).isEqualTo(processCharge.getSpanId());
    assertThat(span("process billing.Receipt").getParentSpanId())
        .isEqualTo(sendReceipt.getSpanId());
  }

  @Test
  void headersTheCallerSetWinOverTheInjectedOnes() {
    String foreign = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    Span request = otel.getOpenTelemetry().getTracer("test").spanBuilder("job").startSpan();
    String id;
    try (Scope s = request.makeCurrent()) {
      id =
          queue
              .enqueue(
                  new Charge("o-2"),
                  EnqueueOptions.defaults()
                      .withHeaders(Map.of("traceparent", foreign, "tenant", "acme")))
              .messageId()
              .toString();
    } finally {
      request.end();
    }
    Map<String, String> seen = new ConcurrentHashMap<>();
    CommandHandlers handlers =
        CommandHandlers.builder().on(Charge.class, (c, ctx) -> seen.putAll(ctx.headers())).build();
    PumpTester.builder(ds, queue.driver(handlers))
        .interceptor(tracing.interceptor())
        .build()
        .drainUntilIdle();
    assertThat(seen).containsEntry("traceparent", foreign).containsEntry("tenant", "acme");
    SpanData consumer =
        otel.getSpans().stream()
            .filter(s -> id.equals(s.getAttributes().get(TracingInterceptor.MESSAGE_ID)))
            .filter(s -> s.getKind() == SpanKind.CONSUMER)
            .findFirst()
            .orElseThrow();
    assertThat(consumer.getTraceId()).isEqualTo("0af7651916cd43dd8448eb211c80319c");
    assertThat(consumer.getAttributes().get(TracingInterceptor.CONSUMER_GROUP))
        .isEqualTo("commands");
  }

  @Test
  void aBatchIsOneProducerSpanAndEachOfItsMessagesIsItsChild() {
    List<NewCommand> batch =
        List.of(
            NewCommand.of(new Charge("o-3"), EnqueueOptions.defaults()),
            NewCommand.of(new Receipt("o-3"), EnqueueOptions.defaults()));
    Transactions.inNew(ds, "enqueueing in a test", tx -> queue.enqueueAll(tx, batch));
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(Charge.class, (c, ctx) -> {})
            .on(Receipt.class, (r, ctx) -> {})
            .build();
    PumpTester.builder(ds, queue.driver(handlers))
        .interceptor(tracing.interceptor())
        .build()
        .drainUntilIdle();
    SpanData send = span("send");
    assertThat(send.getAttributes().get(TracingProducerHook.BATCH_COUNT)).isEqualTo(2L);
    assertThat(send.getAttributes().get(TracingInterceptor.DESTINATION)).isNull();
    assertThat(send.getAttributes().get(TracingInterceptor.MESSAGE_ID)).isNull();
    assertThat(send.getParentSpanContext().isValid()).isFalse(); // no current span: a root
    assertThat(List.of(span("process billing.Charge"), span("process billing.Receipt")))
        .allMatch(s -> s.getParentSpanId().equals(send.getSpanId()));
  }

  @Test
  void aFailedAppendEndsItsProducerSpanWithTheErrorType() {
    Transactions.inNew(
        ds,
        "appending in a test",
        tx -> store.appendToKey(tx, "order-9", 0, List.of(new Refunded("o-9"))));
    assertThatThrownBy(
            () ->
                Transactions.inNew(
                    ds,
                    "appending in a test",
                    tx -> store.appendToKey(tx, "order-9", 0, List.of(new Refunded("o-9")))))
        .isInstanceOf(OffsetConflictException.class);
    List<SpanData> sends =
        otel.getSpans().stream().filter(s -> s.getName().equals("send billing.Refunded")).toList();
    assertThat(sends).hasSize(2);
    assertThat(sends.get(0).getStatus().getStatusCode()).isNotEqualTo(StatusCode.ERROR);
    assertThat(sends.get(1).getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(sends.get(1).getAttributes().get(TracingInterceptor.ERROR_TYPE))
        .isEqualTo(OffsetConflictException.class.getName());
  }

  @Test
  void aFailedHandlingHasTheExceptionsClassAsErrorType() {
    queue.enqueue(new Refund("o-4"));
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Refund.class,
                (c, ctx) -> {
                  throw new IllegalStateException("card declined");
                })
            .build();
    PumpTester.builder(ds, queue.driver(handlers))
        .interceptor(tracing.interceptor("billing"))
        .build()
        .runOnce();
    SpanData consumer = span("process billing.Refund");
    assertThat(consumer.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(consumer.getAttributes().get(TracingInterceptor.ERROR_TYPE))
        .isEqualTo(IllegalStateException.class.getName());
    assertThat(consumer.getAttributes().get(TracingInterceptor.OUTCOME)).isEqualTo("failed");
  }

  @Test
  void balancerStoresCarryTheirProducerSpanInTheirPropertiesAndTheirOwnWin() {
    BalancerOperations.of(ds).migrate();
    MessageBalancer balancer =
        MessageBalancer.builder(ds, "tenants").producerHook(tracing.producerHook()).build();
    byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
    Span request = otel.getOpenTelemetry().getTracer("test").spanBuilder("ingest").startSpan();
    long single;
    long[] batch;
    try (Scope s = request.makeCurrent()) {
      single = balancer.storeMessage("k1", body, Map.of("tenant", "acme"));
      batch =
          balancer.storeMessages(
              List.of(NewMessage.of("k2", body), NewMessage.of("k3", body, Map.of("n", 1))));
    } finally {
      request.end();
    }
    Map<Long, Object> tenant = new ConcurrentHashMap<>();
    var driver =
        balancer.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      tenant.put(m.id(), m.properties().getOrDefault("tenant", "none"));
                      return Result.ok();
                    })
                .build());
    PumpTester.builder(ds, driver)
        .interceptor(tracing.interceptor())
        .batchSize(10)
        .build()
        .drainUntilIdle();

    List<SpanData> sends =
        otel.getSpans().stream().filter(s -> s.getName().equals("send tenants")).toList();
    assertThat(sends).hasSize(2);
    SpanData one = sends.get(0);
    SpanData many = sends.get(1);
    assertThat(one.getAttributes().get(TracingInterceptor.MESSAGE_ID))
        .isEqualTo(Long.toString(single));
    assertThat(many.getAttributes().get(TracingProducerHook.BATCH_COUNT)).isEqualTo(2L);
    assertThat(sends)
        .allMatch(s -> s.getParentSpanId().equals(request.getSpanContext().getSpanId()));
    assertThat(tenant).containsEntry(single, "acme").containsEntry(batch[0], "none");
    for (SpanData consumer :
        otel.getSpans().stream().filter(s -> s.getKind() == SpanKind.CONSUMER).toList()) {
      String id = consumer.getAttributes().get(TracingInterceptor.MESSAGE_ID);
      String parent = id.equals(Long.toString(single)) ? one.getSpanId() : many.getSpanId();
      assertThat(consumer.getParentSpanId()).as("parent of %s", id).isEqualTo(parent);
      assertThat(consumer.getAttributes().get(TracingInterceptor.CONSUMER_GROUP))
          .isEqualTo("tenants");
    }
  }

  @Test
  void rawDelayedAndScheduledEnqueuesAreTracedToo() throws Exception {
    String raw;
    String delayed;
    try (java.sql.Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      raw =
          queue
              .enqueueRaw(
                  c,
                  "billing.Receipt",
                  "{\"order\":\"o-5\"}".getBytes(StandardCharsets.UTF_8),
                  EnqueueOptions.defaults())
              .messageId()
              .toString();
      c.commit();
    }
    delayed =
        queue
            .enqueue(
                new Refund("o-5"),
                EnqueueOptions.defaults().withDelay(java.time.Duration.ofHours(1)))
            .messageId()
            .toString();
    queue.defineSchedule(
        org.messagepump.commands.Schedule.every(
            "hourly-charge", java.time.Duration.ofHours(1), new Charge("tick")));
    String tick = queue.operations().schedules().trigger("hourly-charge").orElseThrow().toString();

    assertThat(span("send billing.Receipt").getAttributes().get(TracingInterceptor.MESSAGE_ID))
        .isEqualTo(raw);
    assertThat(span("send billing.Refund").getAttributes().get(TracingInterceptor.MESSAGE_ID))
        .isEqualTo(delayed);
    SpanData sendTick = span("send billing.Charge");
    assertThat(sendTick.getAttributes().get(TracingInterceptor.MESSAGE_ID)).isEqualTo(tick);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(Charge.class, (c, ctx) -> {})
            .on(Receipt.class, (r, ctx) -> {})
            .build();
    PumpTester.builder(ds, queue.driver(handlers))
        .interceptor(tracing.interceptor())
        .build()
        .drainUntilIdle();
    assertThat(span("process billing.Charge").getParentSpanId()).isEqualTo(sendTick.getSpanId());
    assertThat(span("process billing.Receipt").getParentSpanId())
        .isEqualTo(span("send billing.Receipt").getSpanId());
  }

  @Test
  void theBuildersAndTheInterceptorRefuseNulls() {
    assertThatThrownBy(() -> CommandQueue.builder(ds).producerHook(null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> EventStore.builder(ds, CODEC).producerHook(null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> MessageBalancer.builder(ds, "g").producerHook(null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> PumpTracing.create(null)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> tracing.interceptor(null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> tracing.interceptor(" ")).isInstanceOf(IllegalArgumentException.class);
  }

  private SpanData span(String name) {
    List<SpanData> named = otel.getSpans().stream().filter(s -> s.getName().equals(name)).toList();
    assertThat(named).as("spans named %s", name).hasSize(1);
    return named.get(0);
  }
}
