package org.messagepump.spring.boot.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.MessageTypes;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.spring.boot.CommandPump;
import org.messagepump.spring.boot.EventPump;
import org.messagepump.spring.boot.SpringTestDatabase;
import org.messagepump.spring.boot.TransactionalCommandQueue;
import org.messagepump.spring.boot.TransactionalEventStore;
import org.messagepump.spring.boot.internal.PumpObservations;
import org.messagepump.testkit.PostgresServer;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * One trace, as Spring Boot traces an application (web observation, Micrometer Tracing's
 * OpenTelemetry bridge), from an HTTP request through the enqueue of a command, its handling, the
 * event its handler appends and that event's handling: the pumps need no tracing code.
 */
class ObservationTracingIT {

  static final AttributeKey<String> GROUP = AttributeKey.stringKey("messaging.consumer.group.name");
  static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> DESTINATION =
      AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

  record Charge(String order) {}

  record Charged(String order) {}

  record Render(String report) {}

  record ExportedSpans(InMemorySpanExporter exporter) {}

  static final Map<String, String> ledger = new ConcurrentHashMap<>();

  @SpringBootConfiguration
  @EnableAutoConfiguration(
      excludeName = {
        "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
        "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration",
        // The same on Spring Boot 3.
        "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
        "org.springframework.boot.autoconfigure.data.jpa.JpaRepositoriesAutoConfiguration"
      })
  static class ShopApp {

    @Bean
    MessageTypes messageTypes() {
      return MessageTypes.builder()
          .register(Charge.class, "shop.Charge")
          .register(Charged.class, "shop.Charged")
          .register(Render.class, "shop.Render")
          .build();
    }

    /**
     * The application's spans, each exported as it ends. One exporter per application context:
     * closing a context shuts its tracer provider's processors and their exporter down. Held in a
     * record, not exposed as a SpanExporter bean, which Boot would also add to its batch processor.
     */
    @Bean
    ExportedSpans exportedSpans() {
      return new ExportedSpans(InMemorySpanExporter.create());
    }

    @Bean
    SpanProcessor inMemorySpans(ExportedSpans spans) {
      return SimpleSpanProcessor.create(spans.exporter());
    }

    @Bean
    Orders orders(TransactionalCommandQueue commands) {
      return new Orders(commands);
    }

    @Bean
    CommandPump billing(TransactionalEventStore events) {
      return CommandPump.of(
          "billing",
          CommandHandlers.builder()
              .on(
                  Charge.class,
                  (c, ctx) -> {
                    if (c.order().startsWith("fail-")) {
                      throw new IllegalStateException("card declined");
                    }
                    events.append(List.of(new Charged(c.order())));
                  })
              .on(
                  Render.class,
                  (r, ctx) -> {
                    try {
                      Thread.sleep(60_000); // interrupted by its handler timeout
                    } catch (InterruptedException e) {
                      // swallowed: the handler returns normally all the same
                    }
                  })
              .build());
    }

    @Bean
    EventPump ledgerPump() {
      return EventPump.of(
          "ledger",
          "ledger",
          EventHandlers.builder()
              .on(Charged.class, (e, ctx) -> ledger.put(e.order(), ctx.messageId()))
              .build());
    }
  }

  @RestController
  static class Orders {
    private final TransactionalCommandQueue commands;

    Orders(TransactionalCommandQueue commands) {
      this.commands = commands;
    }

    @PostMapping("/orders/{id}")
    String place(@PathVariable("id") String id) {
      return commands.enqueue(new Charge(id)).messageId().toString();
    }
  }

  @Test
  void oneTraceRunsFromTheRequestThroughTheCommandAndTheEventItsHandlerAppends() throws Exception {
    String database = PostgresServer.get().createDatabase();
    List<String> properties = new ArrayList<>(List.of(SpringTestDatabase.properties(database)));
    properties.addAll(
        List.of(
            "server.port=0",
            "management.tracing.sampling.probability=1.0",
            "messagepump.migrate=library",
            "messagepump.defaults.poll-interval=100ms",
            "messagepump.defaults.max-failures=1",
            "messagepump.pumps.billing.handler-timeout-by-type.[shop.Render]=500ms",
            "spring.sql.init.mode=never",
            "spring.flyway.enabled=false",
            "spring.datasource.hikari.maximum-pool-size=8"));
    try (ConfigurableApplicationContext app =
        new SpringApplicationBuilder(ShopApp.class)
            .properties(properties.toArray(String[]::new))
            .run()) {
      assertThat(app.getBean(PumpObservations.class)).isNotNull();
      InMemorySpanExporter spans = app.getBean(ExportedSpans.class).exporter();
      int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
      String commandId = post(port, "/orders/o-1");
      await().atMost(Duration.ofSeconds(30)).until(() -> ledger.containsKey("o-1"));

      // The consumer span ends just after the handler returns.
      await()
          .atMost(Duration.ofSeconds(10))
          .untilAsserted(
              () ->
                  assertThat(spans.getFinishedSpanItems())
                      .extracting(SpanData::getName)
                      .contains("process shop.Charged"));
      SpanData processCharged = find(spans, "process shop.Charged");
      SpanData server =
          spans.getFinishedSpanItems().stream()
              .filter(s -> s.getKind() == SpanKind.SERVER)
              .findFirst()
              .orElseThrow();
      SpanData sendCharge = find(spans, "send shop.Charge");
      SpanData processCharge = find(spans, "process shop.Charge");
      SpanData sendCharged = find(spans, "send shop.Charged");

      String traceId = server.getTraceId();
      assertThat(List.of(sendCharge, processCharge, sendCharged, processCharged))
          .allMatch(s -> s.getTraceId().equals(traceId));
      assertThat(sendCharge.getKind()).isEqualTo(SpanKind.PRODUCER);
      assertThat(sendCharge.getParentSpanId()).isEqualTo(server.getSpanId());
      assertThat(sendCharge.getAttributes().get(SYSTEM)).isEqualTo("messagepump");
      assertThat(sendCharge.getAttributes().get(DESTINATION)).isEqualTo("shop.Charge");
      assertThat(sendCharge.getAttributes().get(MESSAGE_ID)).isEqualTo(commandId);
      assertThat(processCharge.getKind()).isEqualTo(SpanKind.CONSUMER);
      assertThat(processCharge.getParentSpanId()).isEqualTo(sendCharge.getSpanId());
      assertThat(processCharge.getAttributes().get(GROUP)).isEqualTo("billing");
      assertThat(sendCharged.getKind()).isEqualTo(SpanKind.PRODUCER);
      assertThat(sendCharged.getParentSpanId()).isEqualTo(processCharge.getSpanId());
      assertThat(processCharged.getParentSpanId()).isEqualTo(sendCharged.getSpanId());
      assertThat(processCharged.getAttributes().get(GROUP)).isEqualTo("ledger");
      assertThat(processCharged.getAttributes().get(MESSAGE_ID)).isEqualTo(ledger.get("o-1"));

      // A failed handling: error.type names the exception's class.
      post(port, "/orders/fail-2");
      SpanData failed =
          await()
              .atMost(Duration.ofSeconds(30))
              .until(
                  () ->
                      spans.getFinishedSpanItems().stream()
                          .filter(s -> s.getName().equals("process shop.Charge"))
                          .filter(s -> s.getAttributes().get(ERROR_TYPE) != null)
                          .findFirst()
                          .orElse(null),
                  s -> s != null);
      assertThat(failed.getAttributes().get(ERROR_TYPE))
          .isEqualTo(IllegalStateException.class.getName());

      // A handler that ran past its timeout: error.type is timeout, whatever it returned.
      String renderId =
          app.getBean(CommandQueue.class).enqueue(new Render("r-1")).messageId().toString();
      SpanData timedOut =
          await()
              .atMost(Duration.ofSeconds(30))
              .until(() -> find(spans, "process shop.Render"), s -> s != null);
      assertThat(timedOut.getAttributes().get(MESSAGE_ID)).isEqualTo(renderId);
      assertThat(timedOut.getAttributes().get(ERROR_TYPE)).isEqualTo("timeout");
      assertThat(app.getBean(CommandQueue.class)).isNotNull();
    }
  }

  @Test
  void tracingCanBeSwitchedOff() {
    String database = PostgresServer.get().createDatabase();
    List<String> properties = new ArrayList<>(List.of(SpringTestDatabase.properties(database)));
    properties.addAll(
        List.of(
            "server.port=0",
            "messagepump.tracing.enabled=false",
            "messagepump.auto-startup=false",
            "spring.sql.init.mode=never",
            "spring.flyway.enabled=false"));
    try (ConfigurableApplicationContext app =
        new SpringApplicationBuilder(ShopApp.class)
            .properties(properties.toArray(String[]::new))
            .run()) {
      assertThat(app.getBeanProvider(PumpObservations.class).getIfAvailable()).isNull();
    }
  }

  private static SpanData find(InMemorySpanExporter spans, String name) {
    return spans.getFinishedSpanItems().stream()
        .filter(s -> s.getName().equals(name))
        .findFirst()
        .orElse(null);
  }

  private static String post(int port, String path) throws Exception {
    HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                    .POST(HttpRequest.BodyPublishers.noBody())
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).isEqualTo(200);
    return response.body();
  }
}
