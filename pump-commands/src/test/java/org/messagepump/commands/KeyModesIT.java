package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.FreshTables;
import org.messagepump.testkit.PostgresExtension;

/** Idempotency keys kept forever, while their command is pending, or for a period. */
@ExtendWith(PostgresExtension.class)
class KeyModesIT {

  private static final String SCHEMA = "keymodes";

  @RegisterExtension
  static final FreshTables TABLES =
      FreshTables.schema(SCHEMA, (ds, s) -> CommandOperations.of(ds, s).migrate());

  private CommandQueue queue;
  private final AtomicInteger handled = new AtomicInteger();
  private volatile int failFirst;
  private final java.util.concurrent.atomic.AtomicLong keysAtSuccess =
      new java.util.concurrent.atomic.AtomicLong(-1);
  private DataSource ds;

  @BeforeEach
  void setUp(DataSource ds) {
    this.ds = ds;
    keysAtSuccess.set(-1);
    queue = CommandQueue.builder(ds).codec(Fixtures.CODEC).schema(SCHEMA).build();
    handled.set(0);
    failFirst = 0;
  }

  private MessagePump pump(DataSource ds, int maxFailures) {
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  if (c.orderId().startsWith("poison")) {
                    throw new IllegalStateException("poison");
                  }
                  if (ctx.attempt() <= failFirst) {
                    throw new IllegalStateException("not yet");
                  }
                  // Seen from another connection: what is committed while this attempt runs.
                  keysAtSuccess.set(count(ds, "SELECT count(*) FROM keymodes.idempotency_keys"));
                  handled.incrementAndGet();
                })
            .build();
    return MessagePump.builder(ds)
        .name("keymodes")
        .driver(queue.driver(handlers))
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(100))
        .maxFailures(maxFailures)
        .build();
  }

  private EnqueueResult whilePending(String order, String key) {
    return queue.enqueue(
        new PlaceOrder(order), EnqueueOptions.defaults().withIdempotencyKeyWhilePending(key));
  }

  static void update(DataSource ds, String sql, Object... args) {
    try (Connection c = ds.getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setObject(i + 1, args[i]);
      }
      ps.executeUpdate();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  private static long keys(DataSource ds, String key) {
    return count(
        ds, "SELECT count(*) FROM keymodes.idempotency_keys WHERE idempotency_key = ?", key);
  }

  @Test
  void aKeyKeptWhilePendingIsReleasedWhenItsCommandIsHandled(DataSource ds) {
    failFirst = 1; // the first attempt fails: a postponed command keeps its key
    EnqueueResult first = whilePending("o-1", "sync-customer-7");
    assertThat(first.isDuplicate()).isFalse();
    assertThat(whilePending("o-1", "sync-customer-7"))
        .isEqualTo(new EnqueueResult.Duplicate(first.messageId()));
    try (MessagePump pump = pump(ds, 5)) {
      pump.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == 1);
      // The failed first attempt was postponed with its key; the successful one released it.
      assertThat(keysAtSuccess).hasValue(1);
      await().atMost(Duration.ofSeconds(10)).until(() -> keys(ds, "sync-customer-7") == 0);
      EnqueueResult again = whilePending("o-1", "sync-customer-7");
      assertThat(again.isDuplicate()).isFalse();
      assertThat(again.messageId()).isNotEqualTo(first.messageId());
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == 2);
    }
    // A key kept forever is not released by its command's handling.
    EnqueueResult forever =
        queue.enqueue(new PlaceOrder("o-2"), EnqueueOptions.defaults().withIdempotencyKey("once"));
    try (MessagePump pump = pump(ds, 5)) {
      pump.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == 3);
    }
    assertThat(
            queue.enqueue(
                new PlaceOrder("o-2"), EnqueueOptions.defaults().withIdempotencyKey("once")))
        .isEqualTo(new EnqueueResult.Duplicate(forever.messageId()));
  }

  @Test
  void aKeyKeptWhilePendingIsReleasedWhenItsCommandIsParked(DataSource ds) {
    EnqueueResult first = whilePending("poison-1", "import-42");
    try (MessagePump pump = pump(ds, 2)) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> queue.operations().deadLetters().count() == 1);
    }
    assertThat(keys(ds, "import-42")).isZero();
    assertThat(queue.operations().deadLetters().find(first.messageId())).isPresent();
    assertThat(whilePending("o-3", "import-42").isDuplicate()).isFalse();
  }

  @Test
  void aKeyKeptWhilePendingIsReleasedInLeaseMode(DataSource ds) {
    whilePending("o-4", "lease-key");
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> handled.incrementAndGet())
            .build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("keymodes-lease")
            .driver(
                queue.driver(
                    handlers, CommandDriverOptions.defaults().withLease(Duration.ofSeconds(5))))
            .pollInterval(Duration.ofMillis(50))
            .build()) {
      pump.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == 1);
      await().atMost(Duration.ofSeconds(10)).until(() -> keys(ds, "lease-key") == 0);
    }
    assertThat(whilePending("o-4", "lease-key").isDuplicate()).isFalse();
  }

  @Test
  void aKeyForAPeriodDeduplicatesUntilItExpires(DataSource ds) throws Exception {
    // Two seconds: long enough for the duplicate below on a loaded machine, short enough to wait.
    EnqueueOptions shortPeriod =
        EnqueueOptions.defaults().withIdempotencyKeyFor("report-2030-01-01", Duration.ofSeconds(2));
    EnqueueResult first = queue.enqueue(new PlaceOrder("r"), shortPeriod);
    assertThat(queue.enqueue(new PlaceOrder("r"), shortPeriod))
        .isEqualTo(new EnqueueResult.Duplicate(first.messageId()));
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM keymodes.idempotency_keys"
                    + " WHERE expires_at - created_at = interval '2 s'"))
        .isEqualTo(1);
    // Expiry is measured by the database clock from the key's creation.
    await()
        .atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .until(
            () ->
                count(
                        ds,
                        "SELECT count(*) FROM keymodes.idempotency_keys"
                            + " WHERE expires_at <= clock_timestamp()")
                    == 1);
    // The enqueue that takes the expired key over gives it its own period.
    EnqueueOptions hour =
        EnqueueOptions.defaults().withIdempotencyKeyFor("report-2030-01-01", Duration.ofHours(1));
    EnqueueResult second = queue.enqueue(new PlaceOrder("r"), hour);
    assertThat(second.isDuplicate()).isFalse();
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM keymodes.idempotency_keys WHERE message_id = ?"
                    + " AND expires_at - created_at = interval '1 h'",
                second.messageId()))
        .isEqualTo(1);
    assertThat(queue.enqueue(new PlaceOrder("r"), shortPeriod))
        .isEqualTo(new EnqueueResult.Duplicate(second.messageId()));
    assertThat(count(ds, "SELECT count(*) FROM keymodes.commands")).isEqualTo(2);
  }

  @Test
  void concurrentEnqueuesOfAnExpiredKeyEnqueueExactlyOne(DataSource ds) throws Exception {
    int threads = 6;
    int rounds = 15;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < rounds; round++) {
        String key = "expired-" + round;
        queue.enqueue(
            new PlaceOrder("old"),
            EnqueueOptions.defaults().withIdempotencyKeyFor(key, Duration.ofHours(1)));
        update(
            ds,
            "UPDATE keymodes.idempotency_keys SET expires_at = clock_timestamp() - interval '1 s'"
                + " WHERE idempotency_key = ?",
            key);
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Future<EnqueueResult>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          results.add(
              pool.submit(
                  () -> {
                    try (Connection c = ds.getConnection()) {
                      c.setAutoCommit(false);
                      start.await();
                      EnqueueResult r =
                          queue.enqueue(
                              c,
                              new PlaceOrder("new"),
                              EnqueueOptions.defaults()
                                  .withIdempotencyKeyFor(key, Duration.ofHours(1)));
                      // Hold the transaction a little, so the others meet the key while it is
                      // taken over but not committed.
                      Thread.sleep(20);
                      c.commit();
                      return r;
                    }
                  }));
        }
        List<UUID> enqueued = new ArrayList<>();
        List<UUID> duplicateOf = new ArrayList<>();
        for (Future<EnqueueResult> f : results) {
          EnqueueResult r = f.get();
          if (r.isDuplicate()) {
            duplicateOf.add(r.messageId());
          } else {
            enqueued.add(r.messageId());
          }
        }
        assertThat(enqueued).as("round %d", round).hasSize(1);
        assertThat(duplicateOf)
            .as("round %d", round)
            .hasSize(threads - 1)
            .containsOnly(enqueued.get(0));
        assertThat(
                count(
                    ds,
                    "SELECT count(*) FROM keymodes.idempotency_keys WHERE idempotency_key = ?"
                        + " AND message_id = ?",
                    key,
                    enqueued.get(0)))
            .isEqualTo(1);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(count(ds, "SELECT count(*) FROM keymodes.commands")).isEqualTo(2L * rounds);
  }

  @Test
  void keyModeOptionsAreValidatedByName() {
    EnqueueOptions d = EnqueueOptions.defaults();
    assertThatThrownBy(() -> d.withIdempotencyKeyFor("k", Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPeriod must be positive");
    assertThatThrownBy(() -> d.withIdempotencyKeyFor("k", Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPeriod must be positive");
    assertThatThrownBy(() -> d.withIdempotencyKeyFor("k", Duration.ofDays(40_000)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPeriod must be at most");
    assertThatThrownBy(() -> d.withIdempotencyKeyFor("k", null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPeriod must not be null");
    assertThatThrownBy(() -> d.withIdempotencyKeyFor(null, Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey must not be null");
    assertThatThrownBy(() -> d.withIdempotencyKeyWhilePending(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey must not be blank");
    assertThatThrownBy(
            () ->
                new EnqueueOptions(
                    null, null, "k", null, null, null, 0, EnqueueOptions.KeyMode.PERIOD, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPeriod must be set");
    assertThatThrownBy(
            () ->
                new EnqueueOptions(
                    null,
                    null,
                    "k",
                    null,
                    null,
                    null,
                    0,
                    EnqueueOptions.KeyMode.FOREVER,
                    Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyPeriod is only for KeyMode.PERIOD");
    assertThatThrownBy(
            () ->
                new EnqueueOptions(
                    null,
                    null,
                    null,
                    null,
                    null,
                    null,
                    0,
                    EnqueueOptions.KeyMode.WHILE_PENDING,
                    null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs an idempotencyKey");
    // The mode survives the other withers.
    EnqueueOptions o =
        d.withIdempotencyKeyFor("k", Duration.ofMinutes(1))
            .withHeader("a", "b")
            .withDelay(Duration.ofSeconds(1));
    assertThat(o.keyMode()).isEqualTo(EnqueueOptions.KeyMode.PERIOD);
    assertThat(o.keyPeriod()).isEqualTo(Duration.ofMinutes(1));
    assertThat(d.keyMode()).isEqualTo(EnqueueOptions.KeyMode.FOREVER);
  }
}
