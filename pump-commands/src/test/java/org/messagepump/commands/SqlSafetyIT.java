package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.StatementCapture;
import org.messagepump.testkit.TestDatabase;

/** No data value is ever written into SQL text, whatever it holds and however many there are. */
@ExtendWith(PostgresExtension.class)
class SqlSafetyIT {

  /** The only literals the code itself writes: the empty payload of {@code pg_notify}. */
  static final Set<String> ALLOWED = Set.of("''");

  static final String QUIRKY = "it's a \\'type\\\" -- $$ $x$ ;";

  @Test
  void aRepresentativeWorkloadSendsNoLiteral(TestDatabase db) throws Exception {
    CommandOperations.of(db.dataSource()).migrate();
    CommandOperations.of(db.dataSource(), "cq_safety").migrate();
    StatementCapture capture = StatementCapture.of(db.newDataSource("capture", 8));
    DataSource ds = capture.dataSource();
    for (String schema : List.of("commandqueue", "cq_safety")) {
      CommandQueue queue = CommandQueue.builder(ds).codec(Fixtures.CODEC).schema(schema).build();
      EnqueueOptions quirky =
          EnqueueOptions.defaults()
              .withIdempotencyKey("key '\\ 1")
              .withCorrelationId("corr ' \\")
              .withCausationId("cause '' \\\\")
              .withHeader("h'\\", "v'\\\"")
              .withDelay(Duration.ofMillis(1));
      queue.enqueue(new PlaceOrder("o'1\\"), quirky);
      assertThat(queue.enqueue(new PlaceOrder("o'1\\"), quirky).isDuplicate()).isTrue();
      UUID raw =
          queue
              .enqueueRaw(
                  QUIRKY, "p'\\".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults())
              .messageId();
      queue.enqueueAll(
          List.of(
              NewCommand.of(new PlaceOrder("b'1")),
              NewCommand.of(
                  new PlaceOrder("b'2"), EnqueueOptions.defaults().withIdempotencyKey("k'2")),
              NewCommand.of(
                  new PlaceOrder("b'3"),
                  EnqueueOptions.defaults().withDeliverAt(java.time.Instant.now()))));
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        queue.enqueue(c, new PlaceOrder("in'tx"), EnqueueOptions.defaults());
        c.commit();
      }
      List<String> handled = new CopyOnWriteArrayList<>();
      CommandHandlers handlers =
          CommandHandlers.builder()
              .on(PlaceOrder.class, (cmd, ctx) -> handled.add(cmd.orderId()))
              .onRaw(
                  QUIRKY,
                  (bytes, ctx) -> {
                    throw new IllegalStateException("bad ' \\ value " + QUIRKY);
                  })
              .build();
      try (MessagePump pump =
          MessagePump.builder(ds)
              .name("safety")
              .driver(queue.driver(handlers))
              .workers(2)
              .pollInterval(Duration.ofMillis(50))
              .backoff(Duration.ofMillis(20), Duration.ofMillis(100))
              .maxFailures(2)
              .build()) {
        pump.start();
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> handled.size() == 5 && queue.operations().deadLetters().count() == 1);
        DeadLetter d = queue.operations().deadLetters().find(raw).orElseThrow();
        assertThat(d.type()).isEqualTo(QUIRKY);
        assertThat(d.lastError()).contains("bad ' \\ value");
        assertThat(queue.operations().deadLetters().list(QUIRKY, 10)).hasSize(1);
        assertThat(queue.operations().deadLetters().count(QUIRKY)).isEqualTo(1);
        assertThat(queue.operations().deadLetters().retry(raw)).isTrue();
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> queue.operations().deadLetters().count() == 1);
        assertThat(queue.operations().deadLetters().retryAll(QUIRKY)).isEqualTo(1);
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> queue.operations().deadLetters().count() == 1);
      }
      assertThat(queue.operations().depth().of(QUIRKY).deadLetters()).isEqualTo(1);
      assertThat(queue.operations().deadLetters().discardAll(QUIRKY)).isEqualTo(1);
      assertThat(queue.operations().deadLetters().discard(raw)).isFalse();
      assertThat(handled).contains("o'1\\", "b'1", "b'2", "b'3", "in'tx");
    }
    // The claim ran, its type names bound: one text (one type) or one text[] (several).
    List<String> claims =
        capture.statements().stream()
            .filter(sql -> sql.toLowerCase(java.util.Locale.ROOT).contains("skip locked"))
            .distinct()
            .toList();
    claims.forEach(sql -> System.out.println("CLAIM " + sql));
    assertThat(claims).isNotEmpty().allMatch(sql -> sql.contains("?"));
    assertThat(capture.statementsWithLiteralsOtherThan(ALLOWED)).isEmpty();
  }

  @Test
  void oneCallEnqueues100000CommandsWithIdempotencyKeys(TestDatabase db) {
    CommandOperations.of(db.dataSource()).migrate();
    StatementCapture capture = StatementCapture.of(db.newDataSource("bulk", 2));
    CommandQueue queue = CommandQueue.create(capture.dataSource(), Fixtures.CODEC);
    int n = 100_000;
    List<NewCommand> batch = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      batch.add(
          NewCommand.raw(
              "bulk.Type",
              new byte[] {(byte) i},
              EnqueueOptions.defaults().withIdempotencyKey("bulk-'" + i)));
    }
    List<EnqueueResult> first = queue.enqueueAll(batch);
    assertThat(first).hasSize(n).noneMatch(EnqueueResult::isDuplicate);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isEqualTo(n);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.idempotency_keys")).isEqualTo(n);
    // Again: every key is taken, so all 100,000 are looked up in one call.
    List<EnqueueResult> again = queue.enqueueAll(batch);
    assertThat(again).hasSize(n).allMatch(EnqueueResult::isDuplicate);
    for (int i = 0; i < n; i += 997) {
      assertThat(again.get(i).messageId()).isEqualTo(first.get(i).messageId());
    }
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isEqualTo(n);
    assertThat(capture.statementsWithLiteralsOtherThan(ALLOWED)).isEmpty();
    assertThat(capture.statements()).allMatch(sql -> sql.length() < 1_000_000);
  }
}
