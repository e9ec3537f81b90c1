package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.RetentionQueries;
import org.messagepump.core.spi.Transactions;
import org.messagepump.testkit.FreshTables;
import org.messagepump.testkit.PostgresExtension;

/** The retention job: expired keys, old dead letters and old history, in bounded batches. */
@ExtendWith(PostgresExtension.class)
class RetentionIT {

  private static final String SCHEMA = "retention";

  @RegisterExtension
  static final FreshTables TABLES =
      FreshTables.schema(SCHEMA, (ds, s) -> CommandOperations.of(ds, s).migrate());

  private CommandQueue queue;
  private SimpleMeterRegistry registry;

  @BeforeEach
  void setUp(DataSource ds) {
    registry = new SimpleMeterRegistry();
    queue =
        CommandQueue.builder(ds)
            .codec(Fixtures.CODEC)
            .schema(SCHEMA)
            .meterRegistry(registry)
            .build();
  }

  /** 2,500 expired keys, 10 of a running period, 10 kept forever, 5 kept while pending. */
  private static void keys(DataSource ds) {
    Fixtures.execute(
        ds,
        "INSERT INTO retention.idempotency_keys (idempotency_key, message_id, expires_at)"
            + " SELECT 'expired-' || i, gen_random_uuid(), clock_timestamp() - interval '1 s'"
            + " FROM generate_series(1, 2500) i;"
            + " INSERT INTO retention.idempotency_keys (idempotency_key, message_id, expires_at)"
            + " SELECT 'running-' || i, gen_random_uuid(), clock_timestamp() + interval '1 h'"
            + " FROM generate_series(1, 10) i;"
            + " INSERT INTO retention.idempotency_keys (idempotency_key, message_id)"
            + " SELECT 'kept-' || i, gen_random_uuid() FROM generate_series(1, 15) i");
  }

  /** 30 dead letters parked 2 days ago, 4 parked now; 20 history rows 2 days old, 3 new. */
  private static void oldRows(DataSource ds) {
    Fixtures.execute(
        ds,
        "INSERT INTO retention.dead_letters"
            + " (message_id, message_type, payload, failures, enqueued_at, parked_at)"
            + " SELECT gen_random_uuid(), 'orders.PlaceOrder', '\\x7b7d', 5, now(),"
            + " clock_timestamp() - CASE WHEN i <= 30 THEN interval '2 days' ELSE interval '0' END"
            + " FROM generate_series(1, 34) i;"
            + " INSERT INTO retention.command_history"
            + " (message_id, message_type, attempts, handling_micros, handled_at)"
            + " SELECT gen_random_uuid(), 'orders.PlaceOrder', 1, 10,"
            + " clock_timestamp() - CASE WHEN i <= 20 THEN interval '2 days' ELSE interval '0' END"
            + " FROM generate_series(1, 23) i");
  }

  @Test
  void aBatchDeletesAtMostItsSizeAndOnlyExpiredKeys(DataSource ds) {
    keys(ds);
    CommandTables t = CommandTables.of(SCHEMA);
    int first =
        Transactions.inNew(
            ds, "purging", tx -> RetentionQueries.purgeExpiredKeys(tx.dsl(), t, 1000));
    assertThat(first).isEqualTo(1000);
    assertThat(count(ds, "SELECT count(*) FROM retention.idempotency_keys")).isEqualTo(1525);

    CommandRetention.Purged p =
        CommandRetention.builder(queue.operations())
            .batchSize(700)
            .batchPause(Duration.ZERO)
            .build()
            .purge();
    assertThat(p).isEqualTo(new CommandRetention.Purged(1500, 0, 0));
    assertThat(count(ds, "SELECT count(*) FROM retention.idempotency_keys")).isEqualTo(25);
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM retention.idempotency_keys"
                    + " WHERE idempotency_key LIKE 'expired-%'"))
        .isZero();
    assertThat(registry.get("messagepump.commands.purged").tag("what", "keys").counter().count())
        .isEqualTo(1500.0);
  }

  @Test
  void deadLettersAndHistoryGoOnlyPastTheirAgesAndOnlyWhenConfigured(DataSource ds) {
    oldRows(ds);
    CommandRetention keepAll = CommandRetention.builder(queue.operations()).build();
    assertThat(keepAll.purge()).isEqualTo(new CommandRetention.Purged(0, 0, 0));
    assertThat(count(ds, "SELECT count(*) FROM retention.dead_letters")).isEqualTo(34);

    CommandRetention.Purged p =
        CommandRetention.builder(queue.operations())
            .deadLetterAge(Duration.ofDays(1))
            .historyAge(Duration.ofDays(1))
            .batchSize(7)
            .batchPause(Duration.ZERO)
            .build()
            .purge();
    assertThat(p).isEqualTo(new CommandRetention.Purged(0, 30, 20));
    assertThat(count(ds, "SELECT count(*) FROM retention.dead_letters")).isEqualTo(4);
    assertThat(count(ds, "SELECT count(*) FROM retention.command_history")).isEqualTo(3);
    assertThat(
            registry
                .get("messagepump.commands.purged")
                .tag("what", "dead_letters")
                .counter()
                .count())
        .isEqualTo(30.0);
    assertThat(registry.get("messagepump.commands.purged").tag("what", "history").counter().count())
        .isEqualTo(20.0);
  }

  @Test
  void theThreadPurgesEachIntervalAndSleepsWhenNothingIsLeft(DataSource ds) {
    keys(ds);
    oldRows(ds);
    try (CommandRetention r =
        CommandRetention.builder(queue.operations())
            .name("test")
            .deadLetterAge(Duration.ofDays(1))
            .historyAge(Duration.ofDays(1))
            .batchSize(1000)
            .interval(Duration.ofMillis(300))
            .build()) {
      r.start();
      assertThat(r.isRunning()).isTrue();
      await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () ->
                  count(ds, "SELECT count(*) FROM retention.idempotency_keys") == 25
                      && count(ds, "SELECT count(*) FROM retention.dead_letters") == 4
                      && count(ds, "SELECT count(*) FROM retention.command_history") == 3);
      long passes = r.passes();
      long began = System.nanoTime();
      await().atMost(Duration.ofSeconds(20)).until(() -> r.passes() >= passes + 2);
      // Two further passes, each after a 300 ms interval: nothing left, no hot loop. (A lower
      // bound only: a loaded machine may make the passes later, never sooner.)
      assertThat(Duration.ofNanos(System.nanoTime() - began))
          .isGreaterThanOrEqualTo(Duration.ofMillis(300));
      assertThatThrownBy(r::start).isInstanceOf(IllegalStateException.class);
    }
  }

  @Test
  void everyOptionIsValidatedByName(DataSource ds) {
    CommandRetention.Builder b = CommandRetention.builder(queue.operations());
    assertThatThrownBy(() -> CommandRetention.builder(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("operations");
    assertThatThrownBy(() -> b.deadLetterAge(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("deadLetterAge must be positive");
    assertThatThrownBy(() -> b.deadLetterAge(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("deadLetterAge");
    assertThatThrownBy(() -> b.historyAge(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("historyAge must be positive");
    assertThatThrownBy(() -> b.historyAge(Duration.ofDays(40_000)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("historyAge must be at most");
    assertThatThrownBy(() -> b.batchSize(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchSize");
    assertThatThrownBy(() -> b.batchSize(CommandRetention.MAX_BATCH_SIZE + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchSize");
    assertThatThrownBy(() -> b.interval(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("interval");
    assertThatThrownBy(() -> b.interval(Duration.ofDays(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("interval");
    assertThatThrownBy(() -> b.batchPause(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchPause");
    assertThatThrownBy(() -> b.batchPause(Duration.ofMinutes(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchPause");
    assertThatThrownBy(() -> b.name("a b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("name");
    assertThatThrownBy(() -> b.threadFactory(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("threadFactory");
    assertThatThrownBy(() -> queue.operations().history(null, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limit");
    assertThatThrownBy(
            () -> queue.operations().history(null, CommandOperations.MAX_HISTORY_PAGE + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limit");
  }
}
