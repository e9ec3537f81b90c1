package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.Limits;
import org.messagepump.testkit.PostgresExtension;

/**
 * Every write API and option refuses bad input with an {@link IllegalArgumentException} (or a
 * {@link NullPointerException} for a required null) naming the argument, before anything reaches
 * PostgreSQL, so the caller's own transaction survives.
 */
@ExtendWith(PostgresExtension.class)
class InputValidationIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private static final String NUL = "a\0b";
  private static final String TOO_LONG = "é".repeat(Limits.MAX_KEY_BYTES / 2 + 1); // 514 bytes

  private CommandQueue queue;

  @BeforeEach
  void setUp(DataSource ds) {
    queue =
        CommandQueue.builder(ds)
            .codec(Fixtures.CODEC)
            .limits(
                Limits.defaults().withMaxPayloadBytes(64).withMaxHeaders(2).withMaxHeaderBytes(32))
            .build();
  }

  @Test
  void identifiersAreCheckedForNulAndIndexSize() {
    EnqueueOptions d = EnqueueOptions.defaults();
    assertThatThrownBy(() -> d.withIdempotencyKey(NUL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey")
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> d.withIdempotencyKey(TOO_LONG))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey")
        .hasMessageContaining("512");
    assertThatThrownBy(() -> d.withCorrelationId(NUL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("correlationId");
    assertThatThrownBy(() -> d.withCausationId(TOO_LONG))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("causationId");
    assertThatThrownBy(() -> NewCommand.raw(NUL, new byte[1]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type")
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> NewCommand.raw("€".repeat(180), new byte[1]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("512");
  }

  @Test
  void delaysAndInstantsMustFitTimestamptz() {
    EnqueueOptions d = EnqueueOptions.defaults();
    assertThatThrownBy(() -> d.withDelay(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("delay");
    assertThatThrownBy(() -> d.withDelay(Limits.MAX_DELAY.plusDays(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("delay")
        .hasMessageContaining("36500 days");
    assertThatThrownBy(() -> d.withDeliverAt(Instant.parse("1969-12-31T23:59:59Z")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("deliverAt");
    assertThatThrownBy(() -> d.withDeliverAt(Instant.MAX))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("deliverAt");
  }

  @Test
  void headersAreCheckedAgainstTheQueuesLimits() {
    Map<String, String> nullValue = new LinkedHashMap<>();
    nullValue.put("a", null);
    assertThatThrownBy(() -> EnqueueOptions.defaults().withHeaders(nullValue))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("header 'a'");
    assertThatThrownBy(() -> EnqueueOptions.defaults().withHeader("a", NUL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("NUL");
    EnqueueOptions three =
        EnqueueOptions.defaults().withHeaders(Map.of("a", "1", "b", "2", "c", "3"));
    assertThatThrownBy(() -> queue.enqueue(new PlaceOrder("o"), three))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("headers")
        .hasMessageContaining("limit of 2");
    EnqueueOptions big = EnqueueOptions.defaults().withHeader("a", "x".repeat(40));
    assertThatThrownBy(() -> queue.enqueue(new PlaceOrder("o"), big))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("32");
  }

  @Test
  void payloadsAreCheckedAgainstTheQueuesLimit() {
    assertThatThrownBy(() -> queue.enqueueRaw("t", new byte[65], EnqueueOptions.defaults()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxPayloadBytes (64)");
    assertThat(queue.maxPayloadBytes()).isEqualTo(64);
    assertThat(queue.limits().maxHeaders()).isEqualTo(2);
  }

  @Test
  void handlerTypeNamesAreCheckedAtRegistration() {
    assertThatThrownBy(() -> CommandHandlers.builder().onRaw(NUL, (b, ctx) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("raw handler type")
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> CommandHandlers.builder().onRaw("€".repeat(180), (b, ctx) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("512");
  }

  @Test
  void builderOptionsAndSchemaNamesAreChecked(DataSource ds) {
    assertThatThrownBy(() -> CommandQueue.builder(ds).limits(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limits");
    for (String bad : List.of("Upper", "has-dash", "1digit", "x".repeat(41), "", NUL, "a b")) {
      assertThatThrownBy(() -> CommandQueue.builder(ds).schema(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
      assertThatThrownBy(() -> CommandOperations.of(ds, bad).migrate())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
      assertThatThrownBy(() -> CommandOperations.of(ds, bad).grantStatements("r"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
    }
    assertThatThrownBy(() -> CommandQueue.builder(ds).schema(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("schema");
    assertThatThrownBy(() -> CommandOperations.of(ds, "commandqueue").grantStatements(NUL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("role");
    assertThatThrownBy(() -> CommandOperations.of(ds, "commandqueue").grantStatements(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("role");
    assertThat(CommandOperations.of(ds, "commandqueue").grantStatements("app\"role"))
        .containsExactly(
            "GRANT USAGE ON SCHEMA \"commandqueue\" TO \"app\"\"role\"",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE \"commandqueue\".\"commands\","
                + " \"commandqueue\".\"idempotency_keys\", \"commandqueue\".\"dead_letters\","
                + " \"commandqueue\".\"paused_types\", \"commandqueue\".\"schedules\","
                + " \"commandqueue\".\"command_history\" TO \"app\"\"role\"",
            "GRANT USAGE ON SEQUENCE \"commandqueue\".\"lease_tokens\" TO \"app\"\"role\"");
  }

  @Test
  void deadLetterFiltersAreChecked() {
    DeadLetters dl = queue.operations().deadLetters();
    assertThatThrownBy(() -> dl.list(NUL, 10))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type");
    assertThatThrownBy(() -> dl.count(TOO_LONG))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type");
    assertThatThrownBy(() -> dl.retryAll(NUL)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> dl.discardAll(NUL)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aRejectedEnqueueLeavesTheCallersTransactionUsable(DataSource ds) throws Exception {
    Fixtures.execute(ds, "CREATE TABLE IF NOT EXISTS caller_rows (v text)");
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("INSERT INTO caller_rows VALUES ('before')");
      }
      EnqueueOptions three =
          EnqueueOptions.defaults().withHeaders(Map.of("a", "1", "b", "2", "c", "3"));
      assertThatThrownBy(() -> queue.enqueue(c, new PlaceOrder("o"), three))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> queue.enqueueRaw(c, "t", new byte[65], EnqueueOptions.defaults()))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(
              () ->
                  queue.enqueueAll(
                      c,
                      List.of(
                          NewCommand.of(new PlaceOrder("ok")),
                          NewCommand.raw("t", "x".repeat(65).getBytes(StandardCharsets.UTF_8)))))
          .isInstanceOf(IllegalArgumentException.class);
      queue.enqueue(c, new PlaceOrder("after"), EnqueueOptions.defaults());
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO caller_rows VALUES (?)")) {
        ps.setString(1, "after");
        ps.executeUpdate();
      }
      c.commit();
    }
    assertThat(Fixtures.count(ds, "SELECT count(*) FROM caller_rows")).isEqualTo(2);
    assertThat(
            Fixtures.count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_type = 'orders.PlaceOrder'"))
        .isGreaterThanOrEqualTo(1);
  }
}
