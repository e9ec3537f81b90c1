package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.messagepump.commands.Fixtures.count;

import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.testkit.PostgresExtension;

/** The README example runs as written. */
@ExtendWith(PostgresExtension.class)
class ReadmeExampleIT {

  @Test
  void theReadmeExampleRuns(DataSource ds) throws Exception {
    Fixtures.execute(ds, "CREATE TABLE orders (id text PRIMARY KEY, cents bigint)");
    Orders.run(ds);
    long placed =
        count(ds, "SELECT count(*) FROM orders")
            + count(
                ds,
                "SELECT count(*) FROM commandqueue.commands"
                    + " WHERE message_type = 'orders.PlaceOrder'");
    // Both orders were placed (or still wait in the queue if the pump closed first).
    assertThat(placed).isEqualTo(2);
    assertThat(count(ds, "SELECT count(*) FROM commandqueue.idempotency_keys")).isEqualTo(1);
  }
}
