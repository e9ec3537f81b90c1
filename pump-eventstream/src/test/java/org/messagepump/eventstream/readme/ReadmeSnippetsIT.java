package org.messagepump.eventstream.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.PumpTester;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.MessageCodec;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The README's "Event streams" snippet, compiled and run as written (pump-architecture's {@code
 * ReadmeSnippetsTest} checks the text between the markers is what README.md shows).
 */
@ExtendWith(PostgresExtension.class)
class ReadmeSnippetsIT {

  record OrderPlaced(String orderId, long cents) {}

  static void addToTotals(Tx tx, OrderPlaced e) {
    tx.dsl().execute("UPDATE totals SET cents = cents + ?", e.cents());
  }

  @Test
  void theEventStreamsSnippetRuns(TestDatabase db) throws Exception {
    db.execute("CREATE TABLE totals (cents bigint NOT NULL)");
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
      EventStore.migrate(dataSource);
      EventStore store = EventStore.create(dataSource, codec);
      store.append(tx, List.of(new OrderPlaced("o-1", 4200)));       // in your transaction
      EventDriver projection = EventDriver.builder(store)
          .handlerKey("order-totals")                                 // the checkpoints' name
          .on(OrderPlaced.class, (e, ctx) -> addToTotals(ctx.tx(), e))
          .build();
      // spotless:on
      // README:events end
      c.commit();
      PumpTester.builder(dataSource, projection).build().drainUntilIdle();
    }
    assertThat(db.queryLong("SELECT cents FROM totals")).isEqualTo(4200);
  }
}
