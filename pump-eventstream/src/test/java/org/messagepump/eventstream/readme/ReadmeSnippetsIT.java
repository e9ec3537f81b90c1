package org.messagepump.eventstream.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventDriverOptions;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.eventstream.StartPosition;
import org.messagepump.eventstream.StoredEvent;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The README's event-stream snippet and docs/eventstream.md's event-sourced aggregate, compiled and
 * run as written (pump-architecture's {@code ReadmeSnippetsTest} checks that every Java snippet of
 * README.md is the text between some pair of markers).
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIT {

  record OrderPlaced(String orderId, long cents) {}

  static void addToTotals(Tx tx, OrderPlaced e) {
    tx.dsl().execute("UPDATE totals SET cents = cents + ?", e.cents());
  }

  @Test
  void theEventStreamsSnippetRuns(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE IF NOT EXISTS totals (cents bigint NOT NULL)");
    db.execute("TRUNCATE totals");
    db.execute("INSERT INTO totals VALUES (0)");
    DataSource dataSource = db.dataSource();
    MessageCodec codec =
        JsonMessageCodec.of(
            MessageTypes.builder().register(OrderPlaced.class, "orders.OrderPlaced").build());
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      Tx tx = Tx.of(c);
      // README:events begin
      // spotless:off
      EventStore store = EventStore.create(dataSource, codec);
      store.operations().migrate();
      store.append(tx, List.of(new OrderPlaced("o-1", 4200)));       // in your transaction
      EventHandlers handlers = EventHandlers.builder()
          .on(OrderPlaced.class, (e, ctx) -> addToTotals(ctx.tx(), e))
          .build();
      EventDriver projection = store.driver("order-totals", handlers); // the checkpoints' name
      // spotless:on
      // README:events end
      c.commit();
      PumpTester.builder(dataSource, projection).build().drainUntilIdle();
    }
    assertThat(db.queryLong("SELECT cents FROM totals")).isEqualTo(4200);
  }

  record ShipOrder(String orderId) {}

  /** An event-sourced aggregate: its state is folded from its events, its key is its stream. */
  record Order(String id, boolean placed) {
    static Order of(String id) {
      return new Order(id, false);
    }

    Order apply(Object event) {
      return event instanceof OrderPlaced ? new Order(id, true) : this;
    }

    List<Object> place(long cents) {
      if (placed) {
        throw new IllegalStateException("order " + id + " is already placed");
      }
      return List.of(new OrderPlaced(id, cents));
    }
  }

  @Test
  void theEventSourcingSnippetRuns(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE IF NOT EXISTS totals (cents bigint NOT NULL)");
    db.execute("TRUNCATE totals");
    db.execute("INSERT INTO totals VALUES (0)");
    DataSource dataSource = db.dataSource();
    EventOperations.of(dataSource).migrate();
    CommandOperations.of(dataSource).migrate();
    EventStore store =
        EventStore.create(
            dataSource,
            JsonMessageCodec.of(
                MessageTypes.builder().register(OrderPlaced.class, "orders.OrderPlaced").build()));
    CommandQueue commands =
        CommandQueue.create(
            dataSource,
            JsonMessageCodec.of(
                MessageTypes.builder().register(ShipOrder.class, "shipping.ShipOrder").build()));
    try (Connection c = dataSource.getConnection()) { // an order of the past: not shipped again
      c.setAutoCommit(false);
      store.appendToKey(Tx.of(c), "order-6", 0, List.of(new OrderPlaced("order-6", 100)));
      c.commit();
    }
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      Tx tx = Tx.of(c);
      // README:eventsourcing begin
      // spotless:off
      // The aggregate: folded from its own stream, appended to with its version (optimistic).
      Order order = Order.of("order-7");
      long version = 0;
      for (StoredEvent e : store.operations().readKey("order-7", 0, EventOperations.MAX_READ_LIMIT)) {
        order = order.apply(store.decode(e));
        version++;
      }
      store.appendToKey(tx, "order-7", version, order.place(4200)); // OffsetConflictException if stale
      // A projection (from the beginning), and a process manager that starts at the end and
      // enqueues a command in the transaction that advances its checkpoint:
      EventDriver totals = store.driver("order-totals", EventHandlers.builder()
          .on(OrderPlaced.class, (e, ctx) -> addToTotals(ctx.tx(), e))
          .build());
      EventDriver shipping = store.driver("shipping", EventHandlers.builder()
          .on(OrderPlaced.class, (e, ctx) -> commands.enqueue(ctx.tx(), new ShipOrder(e.orderId()),
              EnqueueOptions.defaults().withCausationId(ctx.messageId())))
          .build(), EventDriverOptions.defaults().withStartAt(StartPosition.END)); // not the past
      // spotless:on
      // README:eventsourcing end
      PumpTester.builder(dataSource, shipping).build().drainUntilIdle(); // registers at the end
      c.commit();
      PumpTester.builder(dataSource, totals).build().drainUntilIdle();
      PumpTester.builder(dataSource, shipping).build().drainUntilIdle();
    }
    assertThat(db.queryLong("SELECT cents FROM totals")).isEqualTo(4300);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isOne();
    // A second placement of the same aggregate is refused by the aggregate itself.
    assertThat(store.operations().readKey("order-7", 0, 10)).hasSize(1);
  }
}
