package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Two queues in two schemas of one database, with the same names, never see each other's work. */
@ExtendWith(PostgresExtension.class)
class SchemasIT {

  @Test
  void twoSchemasAreSeparateQueues(TestDatabase db) {
    DataSource ds = db.dataSource();
    assertThat(CommandOperations.of(ds, "tenant_a").migrate()).isEqualTo(6); // V1 to V6
    assertThat(CommandOperations.of(ds, "tenant_b").migrate()).isEqualTo(6);
    assertThat(CommandOperations.of(ds, "tenant_a").migrate()).isZero();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM tenant_a.commandqueue_flyway_history WHERE version = '1'"))
        .isEqualTo(1);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM information_schema.schemata"
                    + " WHERE schema_name = 'commandqueue'"))
        .isZero();
    CommandQueue a = CommandQueue.builder(ds).codec(Fixtures.CODEC).schema("tenant_a").build();
    CommandQueue b = CommandQueue.builder(ds).codec(Fixtures.CODEC).schema("tenant_b").build();
    assertThat(a.schema()).isEqualTo("tenant_a");
    assertThat(a.wakeChannel()).isEqualTo("messagepump_commands_tenant_a");
    assertThat(b.wakeChannel()).isEqualTo("messagepump_commands_tenant_b");

    EnqueueOptions key = EnqueueOptions.defaults().withIdempotencyKey("same-key");
    EnqueueResult ra = a.enqueue(new PlaceOrder("a-1"), key);
    EnqueueResult rb = b.enqueue(new PlaceOrder("b-1"), key);
    assertThat(ra.isDuplicate()).isFalse();
    assertThat(rb.isDuplicate()).isFalse(); // idempotency keys are per schema
    for (int i = 2; i <= 5; i++) {
      a.enqueue(new PlaceOrder("a-" + i));
      b.enqueue(new PlaceOrder("b-" + i));
    }
    UUID poisonA =
        a.enqueueRaw("poison", "x".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults())
            .messageId();
    UUID poisonB =
        b.enqueueRaw("poison", "y".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults())
            .messageId();
    assertThat(a.operations().depth().byType().get("orders.PlaceOrder").due()).isEqualTo(5);

    List<String> seenA = new CopyOnWriteArrayList<>();
    List<String> seenB = new CopyOnWriteArrayList<>();
    try (MessagePump pa = pump(ds, "a", a, seenA);
        MessagePump pb = pump(ds, "b", b, seenB)) {
      pa.start();
      pb.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  seenA.size() == 5
                      && seenB.size() == 5
                      && a.operations().deadLetters().count() == 1
                      && b.operations().deadLetters().count() == 1);
    }
    assertThat(seenA).allMatch(s -> s.startsWith("a-")).doesNotHaveDuplicates();
    assertThat(seenB).allMatch(s -> s.startsWith("b-")).doesNotHaveDuplicates();
    assertThat(a.operations().deadLetters().find(poisonA)).isPresent();
    assertThat(a.operations().deadLetters().find(poisonB)).isEmpty();
    assertThat(b.operations().deadLetters().find(poisonB)).isPresent();
    assertThat(b.operations().deadLetters().find(poisonA)).isEmpty();
    assertThat(a.operations().deadLetters().list("poison", 10))
        .extracting(DeadLetter::messageId)
        .containsExactly(poisonA);

    // Dead-letter operations on one schema leave the other alone.
    assertThat(a.operations().deadLetters().retryAll("poison")).isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM tenant_a.commands")).isEqualTo(1);
    assertThat(db.queryLong("SELECT count(*) FROM tenant_b.commands")).isZero();
    assertThat(b.operations().deadLetters().count()).isEqualTo(1);
    assertThat(b.operations().deadLetters().discard(poisonA)).isFalse();
    assertThat(b.operations().deadLetters().discardAll(null)).isEqualTo(1);
    assertThat(a.operations().deadLetters().count()).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM tenant_a.commands")).isEqualTo(1);
  }

  private static MessagePump pump(
      DataSource ds, String name, CommandQueue queue, List<String> seen) {
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> seen.add(c.orderId()))
            .onRaw(
                "poison",
                (bytes, ctx) -> {
                  throw new IllegalStateException("poison in " + name);
                })
            .build();
    return MessagePump.builder(ds)
        .name("schema-" + name)
        .driver(queue.driver(handlers))
        .workers(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(20), Duration.ofMillis(100))
        .maxFailures(2)
        .build();
  }
}
