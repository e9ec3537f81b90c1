package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/**
 * Finding, cancelling and rescheduling one pending command: by id and by key, each state, a held
 * command refused without waiting, input refused before anything is sent, and a pump working
 * commands while another thread cancels them: a command is handled or cancelled, never both.
 */
@ExtendWith(PostgresExtension.class)
class PendingCommandsIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();
  private PendingCommands pending;

  @BeforeEach
  void setUp(DataSource ds) {
    pending = queue.operations().pending();
  }

  private static MessagePump.Builder pump(DataSource ds, CommandDriver driver) {
    return MessagePump.builder(ds)
        .name("pending")
        .driver(driver)
        .workers(4)
        .batchSize(5)
        .pollInterval(Duration.ofMillis(20))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
        .maxFailures(3);
  }

  @Test
  void findsByIdAndByKeyAndTellsDueFromScheduled() {
    UUID due =
        queue
            .enqueue(
                new PlaceOrder("due"),
                EnqueueOptions.defaults().withIdempotencyKey("k-due").withCorrelationId("corr"))
            .messageId();
    UUID later =
        queue
            .enqueue(
                new PlaceOrder("later"),
                EnqueueOptions.defaults()
                    .withIdempotencyKey("k-later")
                    .withDelay(Duration.ofHours(1)))
            .messageId();

    PendingCommand byId = pending.find(due).orElseThrow();
    assertThat(byId.messageId()).isEqualTo(due);
    assertThat(byId.type()).isEqualTo("orders.PlaceOrder");
    assertThat(byId.correlationId()).isEqualTo("corr");
    assertThat(byId.idempotencyKey()).isNull();
    assertThat(byId.state()).isEqualTo(PendingCommand.State.DUE);
    assertThat(byId.failures()).isZero();
    assertThat(byId.enqueuedAt()).isNotNull();

    PendingCommand byKey = pending.findByKey("k-later").orElseThrow();
    assertThat(byKey.messageId()).isEqualTo(later);
    assertThat(byKey.idempotencyKey()).isEqualTo("k-later");
    assertThat(byKey.state()).isEqualTo(PendingCommand.State.SCHEDULED);
    assertThat(byKey.dueAt()).isAfter(Instant.now().plus(Duration.ofMinutes(50)));
    assertThat(byKey.leaseHolder()).isNull();

    assertThat(pending.find(UUID.randomUUID())).isEmpty();
    assertThat(pending.findByKey("no-such-key")).isEmpty();
  }

  @Test
  void cancelDeletesTheCommandAndKeepsItsKey(DataSource ds) {
    UUID id =
        queue
            .enqueue(new PlaceOrder("c"), EnqueueOptions.defaults().withIdempotencyKey("k-c"))
            .messageId();
    UUID other = queue.enqueue(new PlaceOrder("other")).messageId();

    assertThat(pending.cancelByKey("k-c")).isEqualTo(CancelResult.CANCELLED);
    assertThat(pending.find(id)).isEmpty();
    assertThat(pending.cancelByKey("k-c")).isEqualTo(CancelResult.NOT_FOUND);
    assertThat(pending.cancel(id)).isEqualTo(CancelResult.NOT_FOUND);
    assertThat(pending.cancelByKey("no-such-key")).isEqualTo(CancelResult.NOT_FOUND);
    // The key still deduplicates: the cancelled command does not come back.
    EnqueueResult again =
        queue.enqueue(new PlaceOrder("c"), EnqueueOptions.defaults().withIdempotencyKey("k-c"));
    assertThat(again.isDuplicate()).isTrue();
    assertThat(Fixtures.pending(ds)).isEqualTo(1);

    assertThat(pending.cancel(other)).isEqualTo(CancelResult.CANCELLED);
    assertThat(Fixtures.pending(ds)).isZero();
  }

  @Test
  void rescheduleMovesTheDueTimeBothWays() {
    UUID id =
        queue
            .enqueue(new PlaceOrder("r"), EnqueueOptions.defaults().withIdempotencyKey("k-r"))
            .messageId();
    Instant at = Instant.now().plus(Duration.ofDays(2)).truncatedTo(ChronoUnit.MICROS);

    assertThat(pending.reschedule(id, at)).isEqualTo(RescheduleResult.RESCHEDULED);
    PendingCommand moved = pending.find(id).orElseThrow();
    assertThat(moved.state()).isEqualTo(PendingCommand.State.SCHEDULED);
    assertThat(moved.dueAt()).isEqualTo(at);

    assertThat(pending.rescheduleByKey("k-r", Instant.EPOCH))
        .isEqualTo(RescheduleResult.RESCHEDULED);
    assertThat(pending.find(id).orElseThrow().state()).isEqualTo(PendingCommand.State.DUE);

    assertThat(pending.reschedule(UUID.randomUUID(), at)).isEqualTo(RescheduleResult.NOT_FOUND);
    assertThat(pending.rescheduleByKey("no-such-key", at)).isEqualTo(RescheduleResult.NOT_FOUND);
  }

  @Test
  void aCommandATransactionalPumpHoldsIsRefusedAtOnce(DataSource ds) throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    AtomicInteger runs = new AtomicInteger();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  runs.incrementAndGet();
                  running.countDown();
                  assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                })
            .build();
    UUID id =
        queue
            .enqueue(new PlaceOrder("held"), EnqueueOptions.defaults().withIdempotencyKey("k-h"))
            .messageId();
    try (MessagePump p = pump(ds, queue.driver(handlers)).build()) {
      p.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      long started = System.nanoTime();
      // A plain read: the claim's delete is not committed yet, so the command reads as due.
      assertThat(pending.find(id).orElseThrow().state()).isEqualTo(PendingCommand.State.DUE);
      assertThat(pending.cancel(id)).isEqualTo(CancelResult.HELD);
      assertThat(pending.cancelByKey("k-h")).isEqualTo(CancelResult.HELD);
      assertThat(pending.reschedule(id, Instant.now().plus(Duration.ofHours(1))))
          .isEqualTo(RescheduleResult.HELD);
      // None of them waited for the handler, which runs until it is told to finish; the bound is
      // generous for a loaded machine and far below the handler's 60 s.
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(20));
      finish.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
    }
    assertThat(runs).hasValue(1);
    assertThat(pending.cancel(id)).isEqualTo(CancelResult.NOT_FOUND);
  }

  @Test
  void aCommandUnderALiveLeaseIsRefusedAndShowsItsHolder(DataSource ds) throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  running.countDown();
                  assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                })
            .build();
    UUID id = queue.enqueue(new PlaceOrder("leased")).messageId();
    try (MessagePump p =
        pump(
                ds,
                queue.driver(
                    handlers, CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30))))
            .build()) {
      p.start();
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      PendingCommand c = pending.find(id).orElseThrow();
      assertThat(c.state()).isEqualTo(PendingCommand.State.LEASED);
      assertThat(c.leaseHolder()).contains("@");
      assertThat(c.leaseExpiresAt()).isAfter(Instant.now());
      assertThat(pending.cancel(id)).isEqualTo(CancelResult.HELD);
      assertThat(pending.reschedule(id, Instant.EPOCH)).isEqualTo(RescheduleResult.HELD);
      finish.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
    }
  }

  @Test
  void anExpiredLeaseIsDueAgainAndItsHolderCannotCompleteACancelledCommand(DataSource ds) {
    UUID id = queue.enqueue(new PlaceOrder("expired")).messageId();
    // A lease taken by a process that died: expired a minute ago.
    Fixtures.execute(
        ds,
        "UPDATE commandqueue.commands SET leased_by = '1@gone', lease_token = 7,"
            + " deliver_at = clock_timestamp() - interval '1 minute'");
    assertThat(pending.find(id).orElseThrow().state()).isEqualTo(PendingCommand.State.DUE);
    Instant at = Instant.now().plus(Duration.ofHours(1));
    assertThat(pending.reschedule(id, at)).isEqualTo(RescheduleResult.RESCHEDULED);
    // The expired attempt counts as a failure, as a claim would count it; the lease is gone.
    assertThat(Fixtures.failures(ds, id)).isEqualTo(1);
    assertThat(
            Fixtures.count(
                ds,
                "SELECT count(*) FROM commandqueue.commands"
                    + " WHERE leased_by IS NULL AND lease_token IS NULL"))
        .isEqualTo(1);
    assertThat(pending.cancel(id)).isEqualTo(CancelResult.CANCELLED);
  }

  @Test
  void badInputIsRefusedNamingTheArgument() {
    assertThatThrownBy(() -> pending.find(null)).hasMessageContaining("messageId");
    assertThatThrownBy(() -> pending.cancel(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("messageId");
    assertThatThrownBy(() -> pending.findByKey(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey");
    assertThatThrownBy(() -> pending.cancelByKey("a\0b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey");
    assertThatThrownBy(() -> pending.findByKey(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey");
    assertThatThrownBy(() -> pending.rescheduleByKey("x".repeat(513), Instant.now()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("idempotencyKey");
    assertThatThrownBy(() -> pending.reschedule(UUID.randomUUID(), null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("dueAt");
    assertThatThrownBy(() -> pending.reschedule(UUID.randomUUID(), Instant.MAX))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("dueAt");
  }

  @Test
  void aTransactionalPumpAndACancellerNeverBothHaveACommand(DataSource ds) throws Exception {
    race(ds, 8, handlers -> queue.driver(handlers));
  }

  @Test
  void aLeaseModePumpAndACancellerNeverBothHaveACommand(DataSource ds) throws Exception {
    // Leases far longer than the test: none expires, so a command under a lease is held.
    race(
        ds,
        5,
        handlers ->
            queue.driver(
                handlers, CommandDriverOptions.defaults().withLease(Duration.ofSeconds(60))));
  }

  /**
   * {@code rounds} rounds of 40 commands worked by a pump of 4 workers while this thread cancels
   * them in random order. Every command ends handled once or cancelled, never both and never
   * neither; the handler counts its runs per command (a run that returned, whether or not it
   * committed, counts).
   */
  private void race(
      DataSource ds, int rounds, java.util.function.Function<CommandHandlers, CommandDriver> mk)
      throws Exception {
    Map<UUID, AtomicInteger> runs = new ConcurrentHashMap<>();
    Random random = new Random(42);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  runs.computeIfAbsent(ctx.commandId(), k -> new AtomicInteger()).incrementAndGet();
                  Thread.sleep(1);
                })
            .build();
    int perRound = 40;
    int cancelled = 0;
    int held = 0;
    int notFound = 0;
    try (MessagePump p = pump(ds, mk.apply(handlers)).build()) {
      p.start();
      for (int round = 0; round < rounds; round++) {
        List<NewCommand> batch = new ArrayList<>();
        for (int i = 0; i < perRound; i++) {
          batch.add(NewCommand.of(new PlaceOrder(round + "-" + i), EnqueueOptions.defaults()));
        }
        List<UUID> ids = new ArrayList<>();
        queue.enqueueAll(batch).forEach(r -> ids.add(r.messageId()));
        Collections.shuffle(ids, random);
        List<UUID> gone = new ArrayList<>();
        for (UUID id : ids) {
          switch (pending.cancel(id)) {
            case CANCELLED -> {
              cancelled++;
              gone.add(id);
            }
            case HELD -> held++;
            case NOT_FOUND -> notFound++;
          }
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> Fixtures.pending(ds) == 0);
        for (UUID id : ids) {
          int n = runs.getOrDefault(id, new AtomicInteger()).get();
          assertThat(n)
              .as("runs of %s (cancelled: %s)", id, gone.contains(id))
              .isEqualTo(gone.contains(id) ? 0 : 1);
        }
      }
    }
    assertThat(Fixtures.count(ds, "SELECT count(*) FROM commandqueue.dead_letters")).isZero();
    // Both sides won some: the race was run, not just one side of it.
    assertThat(cancelled).as("cancelled").isPositive();
    assertThat(runs).as("handled").isNotEmpty();
    System.out.printf(
        "pending race: %d cancelled, %d held, %d not found, %d handled%n",
        cancelled, held, notFound, runs.size());
  }
}
