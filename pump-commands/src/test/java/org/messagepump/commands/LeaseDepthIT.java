package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/**
 * What an operator reads about leased commands: the depth counts a command running under a lease as
 * leased, never as due or delayed (its due time is its lease's expiry), and the list of leased
 * commands names the holder, the expiry and the attempt.
 */
@ExtendWith(PostgresExtension.class)
class LeaseDepthIT {

  private static final Duration LEASE = Duration.ofSeconds(30);

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();

  @Test
  void aLeasedCommandIsCountedAndListedAsLeasedWithItsHolderAndExpiry(DataSource ds)
      throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  running.countDown();
                  assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                })
            .build();
    UUID leased = queue.enqueue(new PlaceOrder("leased")).messageId();
    queue.enqueue(
        new PlaceOrder("later"), EnqueueOptions.defaults().withDelay(Duration.ofHours(1)));
    queue.enqueue(new ShipOrder("no pump for it")); // due, never claimed here
    Instant before = Instant.now();
    try (MessagePump p =
        MessagePump.builder(ds)
            .name("lease-depth")
            .driver(queue.driver(handlers, CommandDriverOptions.defaults().withLease(LEASE)))
            .workers(1)
            .pollInterval(Duration.ofMillis(50))
            .build()) {
      p.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();

      QueueDepth depth = queue.operations().depth();
      assertThat(depth.of("orders.PlaceOrder"))
          .isEqualTo(new QueueDepth.TypeDepth(0, 1, 0, 1)); // the lease's expiry is not "delayed"
      assertThat(depth.of("orders.ShipOrder")).isEqualTo(new QueueDepth.TypeDepth(1, 0, 0, 0));
      assertThat(depth.leased()).isEqualTo(1);
      assertThat(depth.pending()).isEqualTo(3);

      List<LeasedCommand> list = queue.operations().leasedCommands(null, 10);
      assertThat(list).hasSize(1);
      LeasedCommand l = list.get(0);
      assertThat(l.messageId()).isEqualTo(leased);
      assertThat(l.type()).isEqualTo("orders.PlaceOrder");
      assertThat(l.holder())
          .isEqualTo(java.lang.management.ManagementFactory.getRuntimeMXBean().getName());
      assertThat(l.attempt()).isEqualTo(1);
      assertThat(l.fencingToken()).isPositive();
      // Bounded generously: the database's clock and this JVM's may differ by a little, and a
      // heartbeat may have moved the expiry on by up to a third of the lease.
      assertThat(l.leaseExpiresAt())
          .isAfter(before.plus(LEASE).minusSeconds(10))
          .isBefore(Instant.now().plus(LEASE).plusSeconds(10));
      assertThat(queue.operations().leasedCommands("orders.PlaceOrder", 1)).containsExactly(l);
      assertThat(queue.operations().leasedCommands("orders.ShipOrder", 10)).isEmpty();

      finish.countDown();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> queue.operations().depth().of("orders.PlaceOrder").leased() == 0);
    }
    assertThat(queue.operations().depth().of("orders.PlaceOrder"))
        .isEqualTo(new QueueDepth.TypeDepth(0, 1, 0));
    assertThat(queue.operations().leasedCommands(null, 10)).isEmpty();
  }

  @Test
  void aBadTypeOrLimitIsRefusedBeforeAnythingIsSent() {
    assertThatThrownBy(() -> queue.operations().leasedCommands(null, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () ->
                queue
                    .operations()
                    .leasedCommands(null, CommandOperations.MAX_LEASED_LIST_LIMIT + 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> queue.operations().leasedCommands("", 10))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> queue.operations().leasedCommands("a\0b", 10))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
