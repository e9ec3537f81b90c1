package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;
import static org.messagepump.commands.Fixtures.pending;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/**
 * A stored row whose headers are valid JSON of the wrong shape never makes acquisition fail: it
 * becomes an undecodable delivery, counted and parked, while the rest of its batch is handled.
 */
@ExtendWith(PostgresExtension.class)
class UnreadableRowIT {

  @Test
  void wrongShapedHeadersAreParkedAndTheGoodCommandsHandledOnce(DataSource ds) throws Exception {
    CommandQueue queue = Fixtures.queue(ds);
    List<UUID> good = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      UUID id = queue.enqueue(new PlaceOrder("good-" + i)).messageId();
      good.add(id);
    }
    UUID nested = queue.enqueue(new PlaceOrder("nested")).messageId();
    UUID array = queue.enqueue(new PlaceOrder("array")).messageId();
    UUID infinite = queue.enqueue(new PlaceOrder("infinite")).messageId();
    for (int i = 25; i < 30; i++) {
      good.add(queue.enqueue(new PlaceOrder("good-" + i)).messageId());
    }
    setHeaders(ds, nested, "{\"trace\":{\"id\":1}}");
    setHeaders(ds, array, "{\"trace\":[1]}");
    Fixtures.execute(
        ds,
        "UPDATE commandqueue.commands SET enqueued_at = 'infinity' WHERE message_id = '"
            + infinite
            + "'");

    List<UUID> handled = new CopyOnWriteArrayList<>();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> handled.add(ctx.commandId()))
            .build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("unreadable")
            .driver(queue.driver(handlers))
            .workers(1)
            .batchSize(10)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
            .maxFailures(3)
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 3 && pending(ds) == 0);
    }
    assertThat(handled)
        .hasSize(30)
        .doesNotHaveDuplicates()
        .containsExactlyInAnyOrderElementsOf(good);
    for (UUID bad : List.of(nested, array)) {
      DeadLetter d = queue.operations().deadLetters().find(bad).orElseThrow();
      assertThat(d.failures()).isEqualTo(3);
      assertThat(d.lastError())
          .contains("UndecodableMessageException")
          .contains("headers")
          .doesNotContain("trace");
      assertThat(d.envelope().headers()).isEmpty(); // listed although unreadable
    }
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.dead_letters WHERE message_id = ?"
                    + " AND enqueued_at = 'infinity' AND failures = 3"
                    + " AND last_error LIKE '%enqueued_at is not a finite time%'",
                infinite))
        .isEqualTo(1);
    assertThat(queue.operations().deadLetters().list(10)).hasSize(3);
    // The stored headers are kept as they were, through the postponements and the parking.
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.dead_letters WHERE message_id = ?"
                    + " AND headers = '{\"trace\":{\"id\":1}}'::jsonb",
                nested))
        .isEqualTo(1);
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.dead_letters WHERE message_id = ?"
                    + " AND headers = '{\"trace\":[1]}'::jsonb",
                array))
        .isEqualTo(1);
    // Retry copies the row back unchanged.
    assertThat(queue.operations().deadLetters().retry(nested)).isTrue();
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_id = ?"
                    + " AND headers = '{\"trace\":{\"id\":1}}'::jsonb",
                nested))
        .isEqualTo(1);
  }

  private static void setHeaders(DataSource ds, UUID id, String json) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE commandqueue.commands SET headers = ?::jsonb WHERE message_id = ?")) {
      ps.setString(1, json);
      ps.setObject(2, id);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }
}
