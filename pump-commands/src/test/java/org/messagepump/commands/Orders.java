package org.messagepump.commands;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import javax.sql.DataSource;
import org.messagepump.core.BusyException;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;

/** The README's example, verbatim (kept compiling and running by {@link ReadmeExampleIT}). */
public class Orders {
  public record PlaceOrder(String orderId, long cents) {}

  public record ShipOrder(String orderId) {}

  public static void run(DataSource dataSource) throws Exception {
    // 1. Schema: idempotent, safe when several processes start together.
    CommandOperations.of(dataSource).migrate();

    // 2. The queue: stable type names, so classes can move without breaking stored commands.
    MessageTypes types =
        MessageTypes.builder()
            .register(PlaceOrder.class, "orders.PlaceOrder")
            .register(ShipOrder.class, "orders.ShipOrder")
            .build();
    CommandQueue queue =
        CommandQueue.builder(dataSource)
            .codec(JsonMessageCodec.of(types))
            .maxPayloadBytes(256 * 1024)
            .build();

    // 3. Handlers: they run inside the delivery's transaction.
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (cmd, ctx) -> {
                  try (PreparedStatement ps =
                      ctx.tx()
                          .connection()
                          .prepareStatement("INSERT INTO orders (id, cents) VALUES (?, ?)")) {
                    ps.setString(1, cmd.orderId());
                    ps.setLong(2, cmd.cents());
                    ps.executeUpdate();
                  }
                  // A follow-up: commits with this handler's writes, or not at all.
                  // Its causation id is this command's id; the correlation id is inherited.
                  ctx.enqueue(
                      new ShipOrder(cmd.orderId()),
                      EnqueueOptions.defaults().withDelay(Duration.ofMinutes(1)));
                })
            .on(
                ShipOrder.class,
                (cmd, ctx) -> {
                  if (warehouseIsDown()) {
                    throw new BusyException("warehouse down"); // retried soon, no failure counted
                  }
                  ship(cmd.orderId()); // any other exception: a failure, retried with backoff
                })
            .build();

    // 4. The pump: acquires only the handlers' types, so pumps with other types share the table.
    try (MessagePump pump =
        MessagePump.builder(dataSource)
            .name("orders")
            .driver(queue.driver(handlers))
            .workers(8)
            .maxFailures(5) // the 5th failed attempt parks the command as a dead letter
            .build()) {
      pump.start();
      queue.addEnqueueListener(pump::wake); // in-process wake-up after queue-own enqueues

      // 5. Enqueue on its own transaction, deduplicated forever by its key.
      EnqueueResult r =
          queue.enqueue(
              new PlaceOrder("o-42", 1999),
              EnqueueOptions.defaults()
                  .withIdempotencyKey("order-o-42")
                  .withCorrelationId("checkout-7")
                  .withHeader("tenant", "acme"));
      if (r instanceof EnqueueResult.Duplicate d) {
        System.out.println("already enqueued as " + d.originalMessageId());
      }

      // ... or inside your own transaction (transactional outbox).
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(false);
        // ... your own writes on c ...
        queue.enqueue(c, new PlaceOrder("o-43", 500), EnqueueOptions.defaults());
        c.commit(); // the command exists only if this commits
      }

      // 6. Operations: depth and dead letters.
      CommandOperations operations = queue.operations();
      QueueDepth depth = operations.depth();
      System.out.println(
          "due ShipOrder: "
              + depth.of("orders.ShipOrder").due()
              + ", delayed: "
              + depth.of("orders.ShipOrder").delayed());
      for (DeadLetter dead : operations.deadLetters().list(100)) {
        System.out.println(
            dead.messageId() + " failed " + dead.failures() + " times: " + dead.lastError());
        operations.deadLetters().retry(dead.messageId()); // back into the queue, failures reset
        // or: operations.deadLetters().discard(dead.messageId());
      }
    }
  }

  static boolean warehouseIsDown() {
    return false;
  }

  static void ship(String orderId) {}
}
