package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;
import static org.messagepump.commands.Fixtures.pending;

import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.ChargeCard;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Several pumps (simulated processes, each with its own pool) on one queue table. */
@ExtendWith(PostgresExtension.class)
class CommandPumpIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS =
      CommandQueueFixture.of(Fixtures.CODEC)
          .table(
              "handled", "CREATE TABLE handled (message_id uuid NOT NULL, type text, pump text)");

  private final CommandQueue queue = COMMANDS.queue();

  /** A handler that records the command in the delivery's own transaction. */
  private static <C> CommandHandler<C> recording(String pump) {
    return (command, ctx) -> {
      try (PreparedStatement ps =
          ctx.tx()
              .connection()
              .prepareStatement("INSERT INTO handled (message_id, type, pump) VALUES (?, ?, ?)")) {
        ps.setObject(1, ctx.commandId());
        ps.setString(2, ctx.envelope().type());
        ps.setString(3, pump);
        ps.executeUpdate();
      }
    };
  }

  private static MessagePump pump(DataSource ds, String name, CommandDriver driver) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(4)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(50), Duration.ofSeconds(1))
        .shutdownGrace(Duration.ofSeconds(20))
        .build();
  }

  @Test
  void threePumpsWithFourWorkersHandleTenThousandCommandsExactlyOnce(TestDatabase db) {
    DataSource ds = db.dataSource();
    List<NewCommand> batch = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      Object c =
          switch (i % 3) {
            case 0 -> new PlaceOrder("o" + i);
            case 1 -> new ShipOrder("s" + i);
            default -> new ChargeCard("c" + i, i);
          };
      batch.add(NewCommand.of(c));
    }
    assertThat(queue.enqueueAll(batch)).hasSize(10_000);

    List<MessagePump> pumps = new ArrayList<>();
    try {
      for (int p = 0; p < 3; p++) {
        String name = "p" + p;
        CommandHandlers handlers =
            CommandHandlers.builder()
                .on(PlaceOrder.class, recording(name))
                .on(ShipOrder.class, recording(name))
                .on(ChargeCard.class, recording(name))
                .build();
        // Each pump is a separate "process" with its own pool.
        MessagePump pump = pump(db.newDataSource(name, 6), name, queue.driver(handlers));
        pumps.add(pump);
        pump.start();
      }
      await()
          .atMost(Duration.ofSeconds(150))
          .pollInterval(Duration.ofMillis(200))
          .until(() -> pending(ds) == 0);
    } finally {
      pumps.forEach(MessagePump::close);
    }
    assertThat(count(ds, "SELECT count(*) FROM handled")).isEqualTo(10_000);
    assertThat(count(ds, "SELECT count(DISTINCT message_id) FROM handled")).isEqualTo(10_000);
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM (SELECT message_id FROM handled"
                    + " GROUP BY message_id HAVING count(*) > 1) d"))
        .isZero();
    assertThat(pending(ds)).isZero();
    assertThat(queue.operations().deadLetters().count()).isZero();
    // Every pump did a share of the work.
    assertThat(count(ds, "SELECT count(DISTINCT pump) FROM handled")).isEqualTo(3);
  }

  @Test
  void pumpsWithDifferentTypesShareTheTableAndTouchOnlyTheirOwn(TestDatabase db) {
    DataSource ds = db.dataSource();
    List<NewCommand> batch = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      batch.add(NewCommand.of(new PlaceOrder("o" + i)));
      batch.add(NewCommand.of(new ShipOrder("s" + i)));
      batch.add(NewCommand.of(new ChargeCard("c" + i, i)));
    }
    queue.enqueueAll(batch);
    MessagePump orders =
        pump(
            db.newDataSource("orders", 6),
            "orders",
            queue.driver(
                CommandHandlers.builder()
                    .on(PlaceOrder.class, recording("orders"))
                    .on(ShipOrder.class, recording("orders"))
                    .build()));
    MessagePump billing =
        pump(
            db.newDataSource("billing", 6),
            "billing",
            queue.driver(
                CommandHandlers.builder().on(ChargeCard.class, recording("billing")).build()));
    try {
      orders.start();
      billing.start();
      await().atMost(Duration.ofSeconds(90)).until(() -> pending(ds) == 0);
    } finally {
      orders.close();
      billing.close();
    }
    assertThat(
            count(
                ds, "SELECT count(*) FROM handled WHERE pump = 'orders' AND type LIKE 'orders.%'"))
        .isEqualTo(600);
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM handled WHERE pump = 'billing'"
                    + " AND type = 'billing.ChargeCard'"))
        .isEqualTo(300);
    assertThat(count(ds, "SELECT count(*) FROM handled")).isEqualTo(900);
  }
}
