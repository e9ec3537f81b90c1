package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.messagepump.commands.Fixtures.count;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;

/**
 * Busy with a retry-after, through the pump's real poll path ({@link PumpTester}): postponed by the
 * asked delay by the database clock, bounded by the backoff base and cap, no failure counted.
 */
@ExtendWith(PostgresExtension.class)
class RetryAfterIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();

  private PumpTester tester(DataSource ds, Duration retryAfter) {
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  throw new BusyException("rate limited downstream", retryAfter);
                })
            .build();
    return PumpTester.builder(ds, queue.driver(handlers))
        .maxFailures(1)
        .backoff(Duration.ofMillis(100), Duration.ofMinutes(10))
        .build();
  }

  /** Seconds from now (database clock) until the command is due again, and its failure count. */
  private static double dueInSeconds(DataSource ds, UUID id) {
    return count(
            ds,
            "SELECT (extract(epoch FROM deliver_at - clock_timestamp()) * 1000)::bigint"
                + " FROM commandqueue.commands WHERE message_id = ?",
            id)
        / 1000.0;
  }

  @Test
  void busyWithRetryAfterPostponesByThatDelayWithoutCountingAFailure(DataSource ds) {
    UUID id = queue.enqueue(new PlaceOrder("a")).messageId();
    List<PumpTester.Result> r = tester(ds, Duration.ofSeconds(30)).runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.BUSY);
    // maxFailures is 1: a counted failure would have parked it.
    assertThat(queue.operations().deadLetters().count()).isZero();
    assertThat(count(ds, "SELECT failures FROM commandqueue.commands WHERE message_id = ?", id))
        .isZero();
    assertThat(dueInSeconds(ds, id)).isBetween(28.0, 30.5);
  }

  @Test
  void aRetryAfterBeyondTheCapIsCappedAndOneBelowTheBaseWaitsTheBase(DataSource ds) {
    UUID far = queue.enqueue(new PlaceOrder("far")).messageId();
    tester(ds, Duration.ofDays(3)).runOnce();
    assertThat(dueInSeconds(ds, far)).isBetween(590.0, 600.5);

    UUID zero = queue.enqueue(new PlaceOrder("zero")).messageId();
    tester(ds, Duration.ZERO).runOnce();
    // Never hot: a zero retry-after still waits the backoff base (100 ms).
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_id = ?"
                    + " AND deliver_at >= enqueued_at + interval '100 milliseconds'",
                zero))
        .isEqualTo(1);
  }

  @Test
  void aNegativeRetryAfterIsRefusedWhereItIsMade() {
    assertThatThrownBy(() -> new BusyException("x", Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retryAfter");
    assertThatThrownBy(() -> Outcome.busy("x", Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
