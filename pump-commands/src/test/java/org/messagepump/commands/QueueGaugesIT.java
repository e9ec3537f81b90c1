package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.testkit.PostgresExtension;

@ExtendWith(PostgresExtension.class)
class QueueGaugesIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private SimpleMeterRegistry registry;
  private CommandQueue queue;
  private DataSource ds;

  @BeforeEach
  void setUp(DataSource ds) {
    this.ds = ds;
    registry = new SimpleMeterRegistry();
    queue = CommandQueue.builder(ds).codec(Fixtures.CODEC).meterRegistry(registry).build();
  }

  private double gauge(String name, String type) {
    Gauge g = registry.find(name).tag("type", type).gauge();
    assertThat(g).as(name + " for " + type).isNotNull();
    return g.value();
  }

  @Test
  void everyTypeOfADriverHasItsDepthAndOldestWaitFromOneSnapshot() {
    queue.driver(
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> {})
            .on(ShipOrder.class, (c, ctx) -> {})
            .build());
    Instant minuteAgo = Instant.now().minus(Duration.ofMinutes(1));
    queue.enqueue(new PlaceOrder("a"), EnqueueOptions.defaults().withDeliverAt(minuteAgo));
    queue.enqueue(new PlaceOrder("b"));
    queue.enqueue(new PlaceOrder("c"), EnqueueOptions.defaults().withDelay(Duration.ofHours(1)));
    Fixtures.execute(
        ds,
        "INSERT INTO commandqueue.dead_letters (message_id, message_type, payload, failures,"
            + " enqueued_at) VALUES (gen_random_uuid(), 'orders.PlaceOrder', '\\x7b7d', 3, now())");

    assertThat(gauge("messagepump.commands.queue.due", "orders.PlaceOrder")).isEqualTo(2);
    assertThat(gauge("messagepump.commands.queue.delayed", "orders.PlaceOrder")).isEqualTo(1);
    assertThat(gauge("messagepump.commands.queue.leased", "orders.PlaceOrder")).isZero();
    assertThat(gauge("messagepump.commands.queue.parked", "orders.PlaceOrder")).isEqualTo(1);
    // The command due a minute ago (by the test's clock; the database's may differ a little).
    assertThat(gauge("messagepump.commands.queue.oldest.due.age", "orders.PlaceOrder"))
        .isBetween(50.0, 600.0);
    // A type the driver handles and the queue does not hold reads zero, not "missing".
    assertThat(gauge("messagepump.commands.queue.due", "orders.ShipOrder")).isZero();
    assertThat(gauge("messagepump.commands.queue.oldest.due.age", "orders.ShipOrder")).isZero();

    // Within the refresh interval every gauge reads the same snapshot: no query per gauge.
    queue.enqueue(new PlaceOrder("d"));
    queue.enqueue(new ShipOrder("e"));
    assertThat(gauge("messagepump.commands.queue.due", "orders.PlaceOrder")).isEqualTo(2);
    assertThat(gauge("messagepump.commands.queue.due", "orders.ShipOrder")).isZero();
    assertThat(queue.operations().depth().of("orders.ShipOrder").due()).isEqualTo(1);
  }

  @Test
  void aTypeFoundInTheTablesGetsGaugesAndTheTypesAreCapped() {
    queue.driver(CommandHandlers.builder().on(PlaceOrder.class, (c, ctx) -> {}).build());
    for (int i = 0; i < QueueGauges.MAX_TYPES + 5; i++) {
      queue.enqueueRaw("other.Type" + i, "{}".getBytes(), EnqueueOptions.defaults());
    }
    // The first read takes the snapshot and gives the types it found their gauges.
    assertThat(gauge("messagepump.commands.queue.due", "orders.PlaceOrder")).isZero();
    long types =
        registry.find("messagepump.commands.queue.due").gauges().stream()
            .map(g -> g.getId().getTag("type"))
            .distinct()
            .count();
    assertThat(types).isEqualTo(QueueGauges.MAX_TYPES);
    assertThat(registry.find("messagepump.commands.queue.due").gauges())
        .allSatisfy(g -> assertThat(g.getId().getTag("schema")).isEqualTo("commandqueue"));
    assertThat(gauge("messagepump.commands.queue.due", "other.Type0")).isEqualTo(1);
  }
}
