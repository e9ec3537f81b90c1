package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;
import static org.messagepump.commands.Fixtures.pending;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.ChargeCard;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/**
 * Retry policies per command type on a real pump: each type parks at its own policy's attempts, and
 * a failure the policy does not retry parks at once.
 */
@ExtendWith(PostgresExtension.class)
class RetryPolicyIT {

  /** Short fixed delays keep the five attempts of the slowest type well under a second of waits. */
  private static final Duration DELAY = Duration.ofMillis(50);

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();

  @Test
  void eachTypeParksAtItsOwnPolicysAttemptsAndANonRetryableFailureParksAtOnce(DataSource ds) {
    AtomicInteger placeRuns = new AtomicInteger();
    AtomicInteger shipRuns = new AtomicInteger();
    AtomicInteger chargeRuns = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  placeRuns.incrementAndGet();
                  throw new IllegalStateException("place failed");
                })
            .on(
                ShipOrder.class,
                (c, ctx) -> {
                  shipRuns.incrementAndGet();
                  throw new IllegalStateException("ship failed");
                })
            .on(
                ChargeCard.class,
                (c, ctx) -> {
                  chargeRuns.incrementAndGet();
                  throw new IllegalArgumentException("card number is malformed");
                })
            .build();
    UUID place = queue.enqueue(new PlaceOrder("p")).messageId();
    UUID ship = queue.enqueue(new ShipOrder("s")).messageId();
    UUID charge = queue.enqueue(new ChargeCard("c", 100)).messageId();
    RetryPolicy pumpPolicy =
        RetryPolicy.defaults()
            .withMaxAttempts(5)
            .withFixedDelay(DELAY)
            .withNonRetryable(IllegalArgumentException.class);
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("retry-policies")
            .driver(queue.driver(handlers))
            .workers(2)
            .pollInterval(DELAY)
            .retryPolicy(pumpPolicy)
            .retryPolicy(
                "orders.PlaceOrder",
                RetryPolicy.defaults().withMaxAttempts(2).withFixedDelay(DELAY))
            .build()) {
      pump.start();
      // About a second of waits and polls; the bound is generous because the machines that run
      // the suite may be heavily loaded (the other ITs of this module wait up to 60 s too).
      await().atMost(Duration.ofSeconds(60)).until(() -> pending(ds) == 0);
    }
    assertThat(placeRuns).hasValue(2);
    assertThat(shipRuns).hasValue(5);
    assertThat(chargeRuns).hasValue(1);
    assertThat(parked(ds, place))
        .isEqualTo("orders.PlaceOrder 2 IllegalStateException: place failed");
    assertThat(parked(ds, ship)).isEqualTo("orders.ShipOrder 5 IllegalStateException: ship failed");
    assertThat(parked(ds, charge))
        .isEqualTo("billing.ChargeCard 1 IllegalArgumentException: card number is malformed");
  }

  private static String parked(DataSource ds, UUID id) {
    assertThat(count(ds, "SELECT count(*) FROM commandqueue.dead_letters WHERE message_id = ?", id))
        .isEqualTo(1);
    try (var c = ds.getConnection();
        var ps =
            c.prepareStatement(
                "SELECT message_type || ' ' || failures || ' ' || last_error"
                    + " FROM commandqueue.dead_letters WHERE message_id = ?")) {
      ps.setObject(1, id);
      try (var rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
