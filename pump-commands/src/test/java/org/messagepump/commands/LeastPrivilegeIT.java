package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
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

/**
 * The owner migrates and applies {@link CommandOperations#grantStatements}; the application then
 * runs everything under a DML-only login role.
 */
@ExtendWith(PostgresExtension.class)
class LeastPrivilegeIT {

  private static final String ROLE = "commands_dml_app";
  private static final String PASSWORD = "dml-pw";

  @Test
  void aDmlOnlyRoleRunsTheQueueThePumpAndTheDeadLetters(TestDatabase db) throws Exception {
    for (String schema : List.of("commandqueue", "cq_least")) {
      CommandOperations.of(db.dataSource(), schema).migrate();
    }
    db.createLoginRole(ROLE, PASSWORD);
    for (String schema : List.of("commandqueue", "cq_least")) {
      for (String grant : CommandOperations.of(db.dataSource(), schema).grantStatements(ROLE)) {
        db.execute(grant);
      }
    }
    DataSource app = db.newDataSource("dml-app", 6, ROLE, PASSWORD);
    for (String schema : List.of("commandqueue", "cq_least")) {
      run(app, schema);
    }
    // Nothing beyond DML: the role cannot change the schema.
    try (Connection c = app.getConnection();
        Statement s = c.createStatement()) {
      assertThatThrownBy(() -> s.execute("DROP TABLE cq_least.commands"))
          .hasMessageContaining("must be owner");
    }
  }

  private static void run(DataSource app, String schema) {
    CommandQueue queue = CommandQueue.builder(app).codec(Fixtures.CODEC).schema(schema).build();
    List<String> handled = new CopyOnWriteArrayList<>();
    for (int i = 0; i < 5; i++) {
      queue.enqueue(
          new PlaceOrder("o-" + i), EnqueueOptions.defaults().withIdempotencyKey("k-" + i));
    }
    assertThat(
            queue
                .enqueue(new PlaceOrder("o-0"), EnqueueOptions.defaults().withIdempotencyKey("k-0"))
                .isDuplicate())
        .isTrue();
    UUID poison =
        queue
            .enqueueRaw("poison", "p".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults())
            .messageId();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  handled.add(c.orderId());
                  if (c.orderId().equals("o-0")) {
                    ctx.enqueue(new PlaceOrder("follow-up"));
                  }
                })
            .onRaw(
                "poison",
                (b, ctx) -> {
                  throw new IllegalStateException("always");
                })
            .build();
    try (MessagePump pump =
        MessagePump.builder(app)
            .name("dml-" + schema)
            .driver(queue.driver(handlers))
            .workers(2)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(20), Duration.ofMillis(100))
            .maxFailures(2)
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> handled.size() == 6 && queue.operations().deadLetters().count() == 1);
      assertThat(queue.operations().deadLetters().list(10))
          .extracting(DeadLetter::messageId)
          .containsExactly(poison);
      assertThat(queue.operations().deadLetters().retry(poison)).isTrue();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 1);
    }
    assertThat(queue.operations().depth().byType()).containsKey("poison");
    assertThat(queue.operations().deadLetters().discardAll("poison")).isEqualTo(1);
    assertThat(queue.operations().deadLetters().retryAll(null)).isZero();
    // Schedules: define, fire, pause, resume, trigger, list, remove.
    Schedules schedules = queue.operations().schedules();
    schedules.define(Schedule.every("dml", Duration.ofSeconds(1), new PlaceOrder("tick")));
    await().atMost(Duration.ofSeconds(10)).until(() -> schedules.fireDue() == 1);
    assertThat(schedules.pause("dml")).isTrue();
    assertThat(schedules.resume("dml")).isTrue();
    assertThat(schedules.trigger("dml")).isPresent();
    assertThat(schedules.list()).extracting(ScheduleInfo::triggered).containsExactly(1L);
    assertThat(schedules.remove("dml")).isTrue();
    // Lease mode: its claims draw fencing tokens from the queue's sequence.
    queue.enqueue(new PlaceOrder("leased"));
    try (MessagePump pump =
        MessagePump.builder(app)
            .name("dml-leased-" + schema)
            .driver(
                queue.driver(
                    handlers, CommandDriverOptions.defaults().withLease(Duration.ofSeconds(5))))
            .pollInterval(Duration.ofMillis(50))
            .build()) {
      pump.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> handled.contains("leased"));
    }
  }
}
