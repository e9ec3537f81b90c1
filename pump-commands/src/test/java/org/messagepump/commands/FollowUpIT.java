package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;
import static org.messagepump.commands.Fixtures.pending;

import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/** Follow-up commands enqueued by a handler commit or roll back with it. */
@ExtendWith(PostgresExtension.class)
class FollowUpIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS =
      CommandQueueFixture.of(Fixtures.CODEC)
          .table(
              "shipped",
              "CREATE TABLE shipped"
                  + " (message_id uuid, order_id text, causation_id text, correlation_id text)");

  private final CommandQueue queue = COMMANDS.queue();

  private MessagePump pump(DataSource ds, CommandHandler<PlaceOrder> place, int maxFailures) {
    CommandHandler<ShipOrder> ship =
        (c, ctx) -> {
          try (PreparedStatement ps =
              ctx.tx().connection().prepareStatement("INSERT INTO shipped VALUES (?, ?, ?, ?)")) {
            ps.setObject(1, ctx.commandId());
            ps.setString(2, c.orderId());
            ps.setString(3, ctx.envelope().causationId());
            ps.setString(4, ctx.envelope().correlationId());
            ps.executeUpdate();
          }
        };
    return MessagePump.builder(ds)
        .name("followups")
        .driver(
            queue.driver(
                CommandHandlers.builder()
                    .on(PlaceOrder.class, place)
                    .on(ShipOrder.class, ship)
                    .build()))
        .workers(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
        .maxFailures(maxFailures)
        .build();
  }

  @Test
  void aFollowUpOfAFailedAttemptIsRolledBackAndOneOfASuccessfulAttemptCommits(DataSource ds) {
    UUID id =
        queue
            .enqueue(new PlaceOrder("o-1"), EnqueueOptions.defaults().withCorrelationId("conv-1"))
            .messageId();
    AtomicInteger calls = new AtomicInteger();
    try (MessagePump pump =
        pump(
            ds,
            (c, ctx) -> {
              ctx.enqueue(new ShipOrder(c.orderId() + "/attempt-" + ctx.attempt()));
              if (calls.incrementAndGet() == 1) {
                throw new IllegalStateException("fail after enqueueing the follow-up");
              }
            },
            5)) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> count(ds, "SELECT count(*) FROM shipped") == 1 && pending(ds) == 0);
    }
    assertThat(calls).hasValue(2);
    // Only the follow-up of attempt 2 exists: attempt 1's was rolled back with its handler.
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM shipped WHERE order_id = 'o-1/attempt-2'"
                    + " AND causation_id = ? AND correlation_id = 'conv-1'",
                id.toString()))
        .isEqualTo(1);
    assertThat(count(ds, "SELECT count(*) FROM shipped")).isEqualTo(1);
  }

  @Test
  void aHandlerThatAlwaysFailsLeavesNoFollowUpEvenWhenParked(DataSource ds) {
    UUID id = queue.enqueue(new PlaceOrder("o-2")).messageId();
    try (MessagePump pump =
        pump(
            ds,
            (c, ctx) -> {
              ctx.enqueue(new ShipOrder("never"));
              throw new IllegalStateException("always");
            },
            2)) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 1);
    }
    assertThat(queue.operations().deadLetters().find(id)).isPresent();
    assertThat(pending(ds)).isZero();
    assertThat(count(ds, "SELECT count(*) FROM shipped")).isZero();
  }

  @Test
  void aRootCommandStartsTheConversation(DataSource ds) {
    UUID id = queue.enqueue(new PlaceOrder("o-3")).messageId();
    try (MessagePump pump = pump(ds, (c, ctx) -> ctx.enqueue(new ShipOrder(c.orderId())), 5)) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> count(ds, "SELECT count(*) FROM shipped") == 1);
    }
    // No correlation id on the root: follow-ups correlate to the root's message id.
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM shipped WHERE causation_id = ? AND correlation_id = ?",
                id.toString(),
                id.toString()))
        .isEqualTo(1);
  }
}
