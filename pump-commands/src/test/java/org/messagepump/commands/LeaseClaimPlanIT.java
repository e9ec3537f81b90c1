package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.testkit.PostgresExtension;

/**
 * A lease-mode claim leases exactly the rows it returns, at most its limit, on a large analyzed
 * table, for one type and several: the locking scan is evaluated once, whatever plan PostgreSQL
 * chooses for the update around it.
 */
@ExtendWith(PostgresExtension.class)
class LeaseClaimPlanIT {

  @Test
  void aClaimLeasesOnlyWhatItReturns(DataSource ds) throws Exception {
    CommandQueue queue = Fixtures.queue(ds);
    Fixtures.execute(ds, "TRUNCATE commandqueue.commands, commandqueue.dead_letters");
    for (int i = 0; i < 20; i++) {
      List<NewCommand> batch = new java.util.ArrayList<>();
      for (int j = 0; j < 500; j++) {
        batch.add(
            NewCommand.of(j % 2 == 0 ? new PlaceOrder("p" + i + "-" + j) : new ShipOrder("s" + j)));
      }
      queue.enqueueAll(batch);
    }
    Fixtures.execute(ds, "ANALYZE commandqueue.commands");
    CommandHandlers one = CommandHandlers.builder().on(PlaceOrder.class, (c, ctx) -> {}).build();
    CommandHandlers two =
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> {})
            .on(ShipOrder.class, (c, ctx) -> {})
            .build();
    long leased = 0;
    for (CommandDriver driver :
        List.of(
            queue.driver(one, CommandDriverOptions.defaults().withLease(Duration.ofMinutes(1))),
            queue.driver(two, CommandDriverOptions.defaults().withLease(Duration.ofMinutes(1))))) {
      for (int max : new int[] {1, 5}) {
        for (int round = 0; round < 20; round++) {
          try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            List<Delivery> claimed = driver.acquire(Tx.of(c), max);
            c.commit();
            assertThat(claimed).hasSize(max);
            leased += claimed.size();
          }
          assertThat(
                  Fixtures.count(
                      ds, "SELECT count(*) FROM commandqueue.commands WHERE leased_by IS NOT NULL"))
              .isEqualTo(leased);
        }
      }
    }
  }
}
