package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.DeliveryContext;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;

/**
 * A command handler's context is the {@link DeliveryContext} every handler gets: the command's ids,
 * type, headers and attempt as enqueued, read through the pump's real runner ({@link PumpTester}).
 */
@ExtendWith(PostgresExtension.class)
class CommandContextIT {

  /** What a handler saw, read through the {@link DeliveryContext} interface only. */
  record Seen(
      String messageId,
      UUID commandId,
      String messageType,
      int attempt,
      String correlationId,
      String causationId,
      Map<String, String> headers) {

    static Seen of(CommandContext ctx) {
      DeliveryContext d = ctx;
      return new Seen(
          d.messageId(),
          ctx.commandId(),
          d.messageType(),
          d.attempt(),
          d.correlationId(),
          d.causationId(),
          d.headers());
    }
  }

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();

  @Test
  void theContextCarriesTheCommandsIdsTypeHeadersAndAttempt(DataSource ds) {
    UUID id =
        queue
            .enqueue(
                new PlaceOrder("o-1"),
                EnqueueOptions.defaults()
                    .withCorrelationId("conv-1")
                    .withCausationId("cause-1")
                    .withHeader("tenant", "acme"))
            .messageId();
    List<Seen> seen = new ArrayList<>();
    PumpTester tester =
        PumpTester.builder(
                ds,
                queue.driver(
                    CommandHandlers.builder()
                        .on(
                            PlaceOrder.class,
                            (c, ctx) -> {
                              seen.add(Seen.of(ctx));
                              if (ctx.attempt() == 1) {
                                throw new IllegalStateException("fail once");
                              }
                            })
                        .build()))
            .backoff(Duration.ofMillis(1), Duration.ofMillis(1))
            .build();

    // The failed attempt is due again after its (1 ms) backoff by the database clock.
    List<PumpTester.Result> results = new ArrayList<>();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              results.addAll(tester.runOnce());
              return results.size() == 2;
            });

    assertThat(results)
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.FAILED, PumpTester.Kind.HANDLED);
    Seen expected =
        new Seen(
            id.toString(),
            id,
            "orders.PlaceOrder",
            1,
            "conv-1",
            "cause-1",
            Map.of("tenant", "acme"));
    assertThat(seen)
        .containsExactly(
            expected,
            new Seen(
                expected.messageId(),
                id,
                expected.messageType(),
                2,
                "conv-1",
                "cause-1",
                expected.headers()));
  }

  @Test
  void withoutACorrelationIdTheCommandStartsTheConversationAndHasNoCause(DataSource ds) {
    UUID id = queue.enqueue(new PlaceOrder("o-2")).messageId();
    List<Seen> seen = new ArrayList<>();
    PumpTester tester =
        PumpTester.builder(
                ds,
                queue.driver(
                    CommandHandlers.builder()
                        .on(
                            PlaceOrder.class,
                            (c, ctx) -> {
                              seen.add(Seen.of(ctx));
                              ctx.enqueue(new ShipOrder(c.orderId()));
                            })
                        .on(ShipOrder.class, (c, ctx) -> seen.add(Seen.of(ctx)))
                        .build()))
            .build();

    tester.drainUntilIdle();

    assertThat(seen).hasSize(2);
    Seen place = seen.get(0);
    assertThat(place.correlationId()).isEqualTo(id.toString()); // its own id: never null
    assertThat(place.causationId()).isNull();
    assertThat(place.headers()).isEmpty();
    // The follow-up is caused by the command and inherits its conversation.
    Seen ship = seen.get(1);
    assertThat(ship.messageType()).isEqualTo("orders.ShipOrder");
    assertThat(ship.causationId()).isEqualTo(id.toString());
    assertThat(ship.correlationId()).isEqualTo(id.toString());
    assertThat(ship.messageId()).isEqualTo(ship.commandId().toString()).isNotEqualTo(id.toString());
  }
}
