package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;

/** Pausing one pump, and pausing a command type for every pump of the cluster. */
@ExtendWith(PostgresExtension.class)
class PauseIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();

  private CommandHandlers both(AtomicInteger placed, AtomicInteger shipped) {
    return CommandHandlers.builder()
        .on(PlaceOrder.class, (c, ctx) -> placed.incrementAndGet())
        .on(ShipOrder.class, (c, ctx) -> shipped.incrementAndGet())
        .build();
  }

  @Test
  void aPausedPumpAcquiresNothingUntilResumed(DataSource ds) {
    AtomicInteger placed = new AtomicInteger();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("paused")
            .driver(queue.driver(both(placed, new AtomicInteger())))
            .workers(3)
            .pollInterval(Duration.ofMillis(20))
            .build()) {
      pump.pause();
      pump.start();
      assertThat(pump.isPaused()).isTrue();
      queue.enqueue(new PlaceOrder("1"));
      pump.wake(); // a wake does not end a pause
      await()
          .during(Duration.ofMillis(600))
          .atMost(Duration.ofSeconds(5))
          .until(() -> placed.get() == 0);
      pump.resume();
      await().atMost(Duration.ofSeconds(10)).until(() -> placed.get() == 1);
      assertThat(pump.isPaused()).isFalse();
      // Paused again while running: still the right number of workers afterwards.
      pump.pause();
      for (int i = 0; i < 10; i++) {
        queue.enqueue(new PlaceOrder("p" + i));
      }
      await()
          .during(Duration.ofMillis(400))
          .atMost(Duration.ofSeconds(5))
          .until(() -> placed.get() == 1);
      pump.resume();
      await().atMost(Duration.ofSeconds(10)).until(() -> placed.get() == 11);
    }
  }

  @Test
  void aTypePausedClusterWideIsSkippedByEveryDriverUntilResumed(DataSource ds) {
    AtomicInteger placed = new AtomicInteger();
    AtomicInteger shipped = new AtomicInteger();
    queue.enqueue(new PlaceOrder("1"));
    queue.enqueue(new ShipOrder("1"));
    assertThat(queue.operations().pauseType("orders.PlaceOrder", "warehouse migration")).isTrue();
    assertThat(queue.operations().pauseType("orders.PlaceOrder", "again")).isFalse();
    assertThat(queue.operations().pausedTypes())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.name()).isEqualTo("orders.PlaceOrder");
              assertThat(p.reason()).isEqualTo("warehouse migration");
              assertThat(p.pausedAt()).isNotNull();
            });

    // A driver of both types (the array claim) takes only the other type.
    PumpTester both =
        PumpTester.builder(ds, queue.driver(both(placed, shipped))).batchSize(4).build();
    assertThat(both.drainUntilIdle())
        .extracting(r -> r.delivery().messageType())
        .containsExactly("orders.ShipOrder");
    // A driver of the paused type alone (the single-type claim) takes nothing.
    PumpTester placeOnly =
        PumpTester.builder(
                ds,
                queue.driver(
                    CommandHandlers.builder()
                        .on(PlaceOrder.class, (c, ctx) -> placed.incrementAndGet())
                        .build()))
            .build();
    assertThat(placeOnly.runOnce()).isEmpty();
    assertThat(placed).hasValue(0);
    assertThat(queue.operations().depth().byType().get("orders.PlaceOrder").due()).isEqualTo(1);

    assertThat(queue.operations().resumeType("orders.PlaceOrder")).isTrue();
    assertThat(queue.operations().resumeType("orders.PlaceOrder")).isFalse();
    assertThat(queue.operations().pausedTypes()).isEmpty();
    List<PumpTester.Result> r = placeOnly.runOnce();
    assertThat(r).hasSize(1);
    assertThat(placed).hasValue(1);
  }

  @Test
  void badPauseArgumentsAreRefusedBeforeAnythingIsSent() {
    assertThatThrownBy(() -> queue.operations().pauseType("", null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type");
    assertThatThrownBy(() -> queue.operations().pauseType("a\0b", null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> queue.operations().pauseType("t", "x".repeat(5000)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reason");
    assertThatThrownBy(() -> queue.operations().resumeType("x".repeat(600)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
