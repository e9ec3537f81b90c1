package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;
import static org.messagepump.commands.Fixtures.pending;

import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/** Delays, Busy, Failed with backoff, parking past maxFailures, and dead-letter operations. */
@ExtendWith(PostgresExtension.class)
class RetryIT {

  private static final Duration BASE = Duration.ofMillis(200);

  @RegisterExtension
  static final CommandQueueFixture COMMANDS =
      CommandQueueFixture.of(Fixtures.CODEC)
          .table(
              "handled_at",
              "CREATE TABLE handled_at (message_id uuid, at timestamptz, attempt int)");

  private final CommandQueue queue = COMMANDS.queue();

  private MessagePump pump(DataSource ds, CommandHandler<PlaceOrder> handler, int maxFailures) {
    return MessagePump.builder(ds)
        .name("retry")
        .driver(queue.driver(CommandHandlers.builder().on(PlaceOrder.class, handler).build()))
        .workers(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(BASE, Duration.ofSeconds(2))
        .maxFailures(maxFailures)
        .build();
  }

  private static void record(CommandContext ctx) throws Exception {
    try (PreparedStatement ps =
        ctx.tx()
            .connection()
            .prepareStatement("INSERT INTO handled_at VALUES (?, clock_timestamp(), ?)")) {
      ps.setObject(1, ctx.commandId());
      ps.setInt(2, ctx.attempt());
      ps.executeUpdate();
    }
  }

  @Test
  void aDelayedCommandIsNotDeliveredBeforeItsTimeByTheDatabaseClock(DataSource ds) {
    UUID late =
        queue
            .enqueue(
                new PlaceOrder("late"), EnqueueOptions.defaults().withDelay(Duration.ofSeconds(2)))
            .messageId();
    UUID now = queue.enqueue(new PlaceOrder("now")).messageId();
    long deliverAtMicros =
        count(
            ds,
            "SELECT (extract(epoch FROM deliver_at) * 1000000)::bigint"
                + " FROM commandqueue.commands WHERE message_id = ?",
            late);
    try (MessagePump pump = pump(ds, (c, ctx) -> record(ctx), 5)) {
      pump.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> pending(ds) == 0);
    }
    long handledMicros =
        count(
            ds,
            "SELECT (extract(epoch FROM at) * 1000000)::bigint FROM handled_at WHERE message_id = ?",
            late);
    assertThat(handledMicros).isGreaterThanOrEqualTo(deliverAtMicros);
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM handled_at a, handled_at b"
                    + " WHERE a.message_id = ? AND b.message_id = ? AND a.at < b.at",
                now,
                late))
        .isEqualTo(1);
  }

  @Test
  void busyKeepsTheFailureCount(DataSource ds) {
    UUID id = queue.enqueue(new PlaceOrder("busy")).messageId();
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    AtomicInteger calls = new AtomicInteger();
    try (MessagePump pump =
        pump(
            ds,
            (c, ctx) -> {
              attempts.add(ctx.attempt());
              if (calls.incrementAndGet() <= 3) {
                throw new BusyException("target locked");
              }
              record(ctx);
            },
            2)) {
      pump.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> pending(ds) == 0);
    }
    // Three Busy outcomes with maxFailures 2: never parked, every attempt was the first.
    assertThat(attempts).containsExactly(1, 1, 1, 1);
    assertThat(count(ds, "SELECT count(*) FROM handled_at WHERE message_id = ?", id)).isEqualTo(1);
    assertThat(queue.operations().deadLetters().count()).isZero();
  }

  @Test
  void aFailingCommandIsRetriedWithBackoffThenParkedAndCanBeRetriedOrDiscarded(DataSource ds) {
    UUID id =
        queue
            .enqueue(
                new PlaceOrder("fails"),
                EnqueueOptions.defaults().withCorrelationId("conv").withHeader("h", "v"))
            .messageId();
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    List<Long> times = new CopyOnWriteArrayList<>();
    AtomicBoolean fail = new AtomicBoolean(true);
    CommandHandler<PlaceOrder> handler =
        (c, ctx) -> {
          attempts.add(ctx.attempt());
          times.add(System.nanoTime());
          record(ctx); // rolled back when the attempt fails
          if (fail.get()) {
            throw new IllegalStateException("boom " + c.orderId());
          }
        };
    try (MessagePump pump = pump(ds, handler, 3)) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 1);
      assertThat(attempts).containsExactly(1, 2, 3);
      for (int i = 1; i < times.size(); i++) {
        assertThat(Duration.ofNanos(times.get(i) - times.get(i - 1)))
            .as("backoff before attempt %d", i + 1)
            .isGreaterThanOrEqualTo(BASE.minusMillis(20));
      }
      assertThat(pending(ds)).isZero();
      assertThat(count(ds, "SELECT count(*) FROM handled_at")).isZero();

      DeadLetter dead = queue.operations().deadLetters().find(id).orElseThrow();
      assertThat(dead.failures()).isEqualTo(3);
      assertThat(dead.lastError()).contains("IllegalStateException").contains("boom fails");
      assertThat(dead.type()).isEqualTo("orders.PlaceOrder");
      assertThat(dead.envelope().correlationId()).isEqualTo("conv");
      assertThat(dead.envelope().headers()).containsEntry("h", "v");
      assertThat(dead.parkedAt()).isAfterOrEqualTo(dead.enqueuedAt());
      assertThat(queue.operations().deadLetters().list(10)).containsExactly(dead);
      assertThat(queue.operations().deadLetters().list("orders.ShipOrder", 10)).isEmpty();
      assertThat(queue.operations().depth().of("orders.PlaceOrder").deadLetters()).isEqualTo(1);

      // Retry: back into the queue with failures reset; it now succeeds on its first attempt.
      attempts.clear();
      fail.set(false);
      assertThat(queue.operations().deadLetters().retry(id)).isTrue();
      assertThat(queue.operations().deadLetters().retry(id)).isFalse();
      await().atMost(Duration.ofSeconds(60)).until(() -> pending(ds) == 0);
      assertThat(attempts).containsExactly(1);
      assertThat(count(ds, "SELECT count(*) FROM handled_at WHERE message_id = ?", id))
          .isEqualTo(1);
      assertThat(queue.operations().deadLetters().count()).isZero();

      // Discard: park another, then delete it for good.
      fail.set(true);
      UUID other = queue.enqueue(new PlaceOrder("other")).messageId();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 1);
      assertThat(queue.operations().deadLetters().discard(other)).isTrue();
      assertThat(queue.operations().deadLetters().find(other)).isEmpty();
      assertThat(pending(ds)).isZero();
    }
  }

  @Test
  void retryAllAndDiscardAllWorkByType(DataSource ds) {
    for (int i = 0; i < 3; i++) {
      queue.enqueue(new PlaceOrder("p" + i));
    }
    try (MessagePump pump =
        pump(
            ds,
            (c, ctx) -> {
              throw new IllegalArgumentException("no");
            },
            1)) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 3);
    }
    assertThat(queue.operations().deadLetters().retryAll("orders.ShipOrder")).isZero();
    assertThat(queue.operations().deadLetters().retryAll("orders.PlaceOrder")).isEqualTo(3);
    assertThat(queue.operations().depth().of("orders.PlaceOrder"))
        .isEqualTo(new QueueDepth.TypeDepth(3, 0, 0));
    assertThat(count(ds, "SELECT sum(failures) FROM commandqueue.commands")).isZero();
    try (MessagePump pump =
        pump(
            ds,
            (c, ctx) -> {
              throw new IllegalArgumentException("no");
            },
            1)) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 3);
    }
    assertThat(queue.operations().deadLetters().discardAll(null)).isEqualTo(3);
    assertThat(queue.operations().depth().deadLetters()).isZero();
  }
}
