package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;

import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
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

/**
 * Handler timeouts through a real pump: a handler stuck in a JDBC call (pg_sleep, which ignores
 * interrupts) and one in Thread.sleep are both stopped at their timeout, nothing they wrote
 * commits, each timeout counts as a failure (parked at maxFailures), and the pump goes on with all
 * its workers.
 */
@ExtendWith(PostgresExtension.class)
class HandlerTimeoutIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS =
      CommandQueueFixture.of(Fixtures.CODEC)
          .table("half_written", "CREATE TABLE half_written (note text)");

  private final CommandQueue queue = COMMANDS.queue();

  private static void write(CommandContext ctx, String note) throws Exception {
    try (PreparedStatement ps =
        ctx.tx().connection().prepareStatement("INSERT INTO half_written VALUES (?)")) {
      ps.setString(1, note);
      ps.executeUpdate();
    }
  }

  @Test
  void stuckHandlersAreStoppedCountedAndParkedAndThePumpKeepsAllItsWorkers(DataSource ds) {
    AtomicInteger running = new AtomicInteger();
    AtomicInteger mostAtOnce = new AtomicInteger();
    AtomicInteger charged = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  write(ctx, "jdbc " + ctx.attempt());
                  try (Statement s = ctx.tx().connection().createStatement()) {
                    s.execute("SELECT pg_sleep(60)"); // a JDBC call: deaf to interrupts
                  }
                  write(ctx, "after jdbc");
                })
            .on(
                ShipOrder.class,
                (c, ctx) -> {
                  write(ctx, "sleep " + ctx.attempt());
                  try {
                    Thread.sleep(60_000);
                  } catch (InterruptedException e) {
                    // A handler that swallows the interrupt and writes on: the pump's connection
                    // is refused to it.
                    write(ctx, "after interrupt");
                  }
                })
            .on(
                ChargeCard.class,
                (c, ctx) -> {
                  int now = running.incrementAndGet();
                  mostAtOnce.accumulateAndGet(now, Math::max);
                  try {
                    Thread.sleep(50);
                  } finally {
                    running.decrementAndGet();
                  }
                  charged.incrementAndGet();
                })
            .build();
    queue.enqueue(new PlaceOrder("stuck-in-jdbc"));
    queue.enqueue(new ShipOrder("stuck-in-sleep"));
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("timeouts")
            .driver(queue.driver(handlers))
            .workers(2)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
            .maxFailures(2)
            .handlerTimeout(Duration.ofSeconds(1))
            .handlerTimeout("orders.ShipOrder", Duration.ofMillis(400))
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 2);
      // Both parked after two timeouts each, with the timeout as their reason.
      assertThat(
              count(
                  ds,
                  "SELECT count(*) FROM commandqueue.dead_letters"
                      + " WHERE failures = 2 AND last_error LIKE '%timeout%'"))
          .isEqualTo(2);
      // Nothing a timed-out handler wrote committed, before or after its interrupt.
      assertThat(count(ds, "SELECT count(*) FROM half_written")).isZero();
      // The pump goes on with both workers.
      for (int i = 0; i < 40; i++) {
        queue.enqueue(new ChargeCard("c" + i, i));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> charged.get() == 40);
      assertThat(mostAtOnce).hasValue(2);
      assertThat(count(ds, "SELECT count(*) FROM half_written")).isZero();
    }
    // No backend is left sleeping: the timeout cancelled the statement.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                count(
                        ds,
                        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%'"
                            + " AND state = 'active' AND pid <> pg_backend_pid()")
                    == 0);
  }
}
