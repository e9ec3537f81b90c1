package org.messagepump.commands.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.PreparedStatement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Driver;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The README's commands snippet and docs/pump.md's pump snippet, compiled and run as written: the
 * text between the {@code README} markers is what the page shows (pump-architecture's {@code
 * ReadmeSnippetsTest} checks it for every Java snippet of README.md).
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIT {

  record PlaceOrder(String orderId, long cents) {}

  static void insertOrder(Tx tx, PlaceOrder cmd) {
    tx.dsl().execute("INSERT INTO orders (id, cents) VALUES (?, ?)", cmd.orderId(), cmd.cents());
  }

  @Test
  void theCommandsSnippetRuns(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE orders (id text PRIMARY KEY, cents bigint)");
    DataSource dataSource = db.dataSource();
    // README:commands begin
    // spotless:off
    CommandOperations.of(dataSource).migrate();
    CommandQueue queue = CommandQueue.create(dataSource, JsonMessageCodec.of(
        MessageTypes.builder().register(PlaceOrder.class, "orders.PlaceOrder").build()));
    CommandHandlers handlers = CommandHandlers.builder()
        .on(PlaceOrder.class, (cmd, ctx) -> insertOrder(ctx.tx(), cmd))  // in the delivery's tx
        .build();
    try (MessagePump pump = MessagePump.builder(dataSource)
        .name("orders").driver(queue.driver(handlers)).maxFailures(5).build()) {
      pump.start();
      queue.enqueue(new PlaceOrder("o-42", 1999),
          EnqueueOptions.defaults().withIdempotencyKey("order-o-42"));
    }
    // spotless:on
    // README:commands end
    long placed =
        db.queryLong("SELECT count(*) FROM orders")
            + db.queryLong("SELECT count(*) FROM commandqueue.commands");
    assertThat(placed).isOne();
  }

  @Test
  void thePumpSnippetRuns(TestDatabase db) throws Exception {
    DataSource dataSource = db.dataSource();
    CommandOperations.of(dataSource).migrate();
    CommandQueue queue =
        CommandQueue.create(
            dataSource,
            JsonMessageCodec.of(
                MessageTypes.builder().register(PlaceOrder.class, "orders.PlaceOrder").build()));
    db.execute("CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, cents bigint)");
    queue.enqueue(new PlaceOrder("o-1", 1));
    Driver driver =
        queue.driver(
            CommandHandlers.builder()
                .on(PlaceOrder.class, (cmd, ctx) -> insertOrder(ctx.tx(), cmd))
                .build());
    // README:pump begin
    // spotless:off
    try (MessagePump pump = MessagePump.builder(dataSource)   // a HikariCP pool, say
            .name("billing")
            .driver(driver)                                  // commands, events, balancer, or yours
            .workers(8)
            .batchSize(1)                                    // 1..64 deliveries per transaction
            .backoff(Duration.ofMillis(250), Duration.ofMinutes(5))
            .maxFailures(10)                                 // the 10th failure parks the delivery
            .build()) {
      pump.start();
      // ... run until shutdown ...
      awaitHandled(db); // test only
    }   // close(): stop acquiring, drain within the grace period, then interrupt and roll back
    // spotless:on
    // README:pump end
    assertThat(db.queryLong("SELECT count(*) FROM orders WHERE id = 'o-1'")).isOne();
  }

  private static void awaitHandled(TestDatabase db) {
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> db.queryLong("SELECT count(*) FROM orders WHERE id = 'o-1'") == 1);
  }

  @SuppressWarnings("unused")
  private static void unused(PreparedStatement ps) {}
}
