package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.messagepump.commands.Fixtures.count;
import static org.messagepump.commands.Fixtures.pending;

import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.Fixtures.Unregistered;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
class EnqueueIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();

  @Test
  void storesEveryOptionWithTheDatabaseClock(DataSource ds) {
    EnqueueResult r =
        queue.enqueue(
            new PlaceOrder("o-1"),
            EnqueueOptions.defaults()
                .withCorrelationId("conv-1")
                .withCausationId("cause-1")
                .withHeader("tenant", "acme")
                .withDelay(Duration.ofMinutes(10)));
    assertThat(r).isInstanceOf(EnqueueResult.Enqueued.class);
    UUID id = r.messageId();
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_id = ?"
                    + " AND message_type = 'orders.PlaceOrder' AND correlation_id = 'conv-1'"
                    + " AND causation_id = 'cause-1' AND headers ->> 'tenant' = 'acme'"
                    + " AND convert_from(payload, 'UTF8')::jsonb ->> 'orderId' = 'o-1'"
                    + " AND failures = 0"
                    + " AND deliver_at - enqueued_at BETWEEN interval '9 min 59 s'"
                    + " AND interval '10 min 1 s'",
                id))
        .isEqualTo(1);
    QueueDepth depth = queue.operations().depth();
    assertThat(depth.of("orders.PlaceOrder")).isEqualTo(new QueueDepth.TypeDepth(0, 1, 0));
  }

  @Test
  void deliverAtIsStoredAsGivenAndRawCommandsAsTheirBytes(DataSource ds) {
    Instant at = Instant.parse("2030-01-01T00:00:00Z");
    UUID id =
        queue
            .enqueueRaw(
                "external.Ping", new byte[] {1, 2, 3}, EnqueueOptions.defaults().withDeliverAt(at))
            .messageId();
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_id = ?"
                    + " AND message_type = 'external.Ping' AND payload = '\\x010203'::bytea"
                    + " AND deliver_at = '2030-01-01T00:00:00Z'",
                id))
        .isEqualTo(1);
    queue.enqueue(new ShipOrder("s"));
    QueueDepth depth = queue.operations().depth();
    assertThat(depth.of("external.Ping").delayed()).isEqualTo(1);
    assertThat(depth.of("orders.ShipOrder").due()).isEqualTo(1);
    assertThat(depth.pending()).isEqualTo(2);
  }

  @Test
  void enqueueInTheCallersTransactionCommitsAndRollsBackWithIt(DataSource ds) throws Exception {
    AtomicInteger hooks = new AtomicInteger();
    queue.addEnqueueListener(hooks::incrementAndGet);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      queue.enqueue(c, new PlaceOrder("rolled-back"), EnqueueOptions.defaults());
      assertThat(pending(ds)).isZero(); // not visible before commit
      c.rollback();
      queue.enqueue(c, new PlaceOrder("committed"), EnqueueOptions.defaults());
      c.commit();
    }
    assertThat(pending(ds)).isEqualTo(1);
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.commands"
                    + " WHERE convert_from(payload, 'UTF8') LIKE '%committed%'"))
        .isEqualTo(1);
    assertThat(hooks).hasValue(0); // hooks run only for the queue's own transactions
    queue.enqueue(new PlaceOrder("own"));
    assertThat(hooks).hasValue(1);
  }

  @Test
  void badInputIsRejectedByNameAndInsertsNothing(DataSource ds) {
    CommandQueue small =
        CommandQueue.builder(ds).codec(Fixtures.CODEC).maxPayloadBytes(100).build();
    assertThatThrownBy(() -> queue.enqueue(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("command must not be null");
    assertThatThrownBy(() -> queue.enqueue(new Unregistered("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Unregistered.class.getName())
        .hasMessageContaining("not registered");
    assertThatThrownBy(() -> small.enqueue(new PlaceOrder("x".repeat(200))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxPayloadBytes (100)");
    assertThatThrownBy(
            () -> queue.enqueueRaw("t", new byte[1024 * 1024 + 1], EnqueueOptions.defaults()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxPayloadBytes (1048576)");
    assertThatThrownBy(
            () ->
                queue.enqueue(
                    new PlaceOrder("x"), EnqueueOptions.defaults().withIdempotencyKey(" ")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey must not be blank");
    assertThatThrownBy(
            () ->
                queue.enqueue(
                    new PlaceOrder("x"),
                    EnqueueOptions.defaults().withDelay(Duration.ofSeconds(-1))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("delay must not be negative");
    assertThatThrownBy(() -> queue.enqueueRaw(" ", new byte[1], EnqueueOptions.defaults()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type must not be blank");
    // A batch with one bad command inserts none of the good ones.
    assertThatThrownBy(
            () ->
                queue.enqueueAll(
                    List.of(
                        NewCommand.of(new PlaceOrder("good")),
                        NewCommand.of(new Unregistered("bad")))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not registered");
    assertThat(pending(ds)).isZero();
    assertThat(count(ds, "SELECT count(*) FROM commandqueue.idempotency_keys")).isZero();
  }

  @Test
  void anUsedKeyReturnsTheOriginalIdAndInsertsNothing(DataSource ds) {
    EnqueueOptions keyed = EnqueueOptions.defaults().withIdempotencyKey("order-1");
    EnqueueResult first = queue.enqueue(new PlaceOrder("1"), keyed);
    EnqueueResult second = queue.enqueue(new PlaceOrder("1 again"), keyed);
    assertThat(first).isInstanceOf(EnqueueResult.Enqueued.class);
    assertThat(second).isEqualTo(new EnqueueResult.Duplicate(first.messageId()));
    assertThat(second.isDuplicate()).isTrue();
    assertThat(pending(ds)).isEqualTo(1);
    // The key outlives its command: after the command is gone it still deduplicates.
    Fixtures.execute(ds, "DELETE FROM commandqueue.commands");
    assertThat(queue.enqueue(new PlaceOrder("1 later"), keyed))
        .isEqualTo(new EnqueueResult.Duplicate(first.messageId()));
    assertThat(pending(ds)).isZero();
  }

  @Test
  void batchEnqueueInsertsManyAndDeduplicatesWithinAndAcrossBatches(DataSource ds) {
    List<NewCommand> batch = new ArrayList<>();
    for (int i = 0; i < 12_000; i++) {
      batch.add(NewCommand.of(new PlaceOrder("b" + i)));
    }
    batch.add(NewCommand.of(new ShipOrder("k"), EnqueueOptions.defaults().withIdempotencyKey("k")));
    batch.add(
        NewCommand.raw(
            "external.Ping", new byte[] {7}, EnqueueOptions.defaults().withIdempotencyKey("k")));
    List<EnqueueResult> results = queue.enqueueAll(batch);
    assertThat(results).hasSize(12_002);
    assertThat(results.get(12_000)).isInstanceOf(EnqueueResult.Enqueued.class);
    assertThat(results.get(12_001))
        .isEqualTo(new EnqueueResult.Duplicate(results.get(12_000).messageId()));
    assertThat(pending(ds)).isEqualTo(12_001);
    Set<UUID> ids = new HashSet<>();
    results.subList(0, 12_000).forEach(r -> ids.add(r.messageId()));
    assertThat(ids).hasSize(12_000);

    List<EnqueueResult> again =
        queue.enqueueAll(
            List.of(
                NewCommand.of(
                    new ShipOrder("k2"), EnqueueOptions.defaults().withIdempotencyKey("k")),
                NewCommand.of(
                    new ShipOrder("new"), EnqueueOptions.defaults().withIdempotencyKey("k3"))));
    assertThat(again.get(0))
        .isEqualTo(new EnqueueResult.Duplicate(results.get(12_000).messageId()));
    assertThat(again.get(1)).isInstanceOf(EnqueueResult.Enqueued.class);
    assertThat(pending(ds)).isEqualTo(12_002);
  }

  @Test
  void eightConcurrentEnqueuersOfOneKeyInsertExactlyOne(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    int enqueuers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(enqueuers);
    try {
      for (int round = 0; round < 20; round++) {
        String key = "race-" + round;
        CountDownLatch start = new CountDownLatch(1);
        List<CompletableFuture<EnqueueResult>> futures = new ArrayList<>();
        for (int i = 0; i < enqueuers; i++) {
          int n = i;
          futures.add(
              CompletableFuture.supplyAsync(
                  () -> {
                    await(start);
                    return queue.enqueue(
                        new PlaceOrder(key + "/" + n),
                        EnqueueOptions.defaults().withIdempotencyKey(key));
                  },
                  pool));
        }
        start.countDown();
        List<EnqueueResult> results = new ArrayList<>();
        for (CompletableFuture<EnqueueResult> f : futures) {
          results.add(f.get(60, TimeUnit.SECONDS));
        }
        List<EnqueueResult> inserted =
            results.stream().filter(r -> r instanceof EnqueueResult.Enqueued).toList();
        assertThat(inserted).as("round %d", round).hasSize(1);
        UUID winner = inserted.get(0).messageId();
        assertThat(results).allMatch(r -> r.messageId().equals(winner));
        assertThat(
                count(
                    ds, "SELECT count(*) FROM commandqueue.commands WHERE message_id = ?", winner))
            .isEqualTo(1);
      }
      assertThat(pending(ds)).isEqualTo(20);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void headersRoundTripThroughJsonb(DataSource ds) {
    Map<String, String> headers = Map.of("a", "1", "quote\"d", "ü \\ \n");
    UUID id =
        queue
            .enqueue(new PlaceOrder("h"), EnqueueOptions.defaults().withHeaders(headers))
            .messageId();
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_id = ?"
                    + " AND headers = '{\"a\":\"1\",\"quote\\\"d\":\"ü \\\\ \\n\"}'::jsonb",
                id))
        .isEqualTo(1);
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }
}
