package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
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

/** The history of handled commands: written in the handling transaction, only when enabled. */
@ExtendWith(PostgresExtension.class)
class HistoryIT {

  private static final String SCHEMA = "history";

  @RegisterExtension
  static final FreshTables TABLES =
      FreshTables.schema(SCHEMA, (ds, s) -> CommandOperations.of(ds, s).migrate());

  private final AtomicInteger handled = new AtomicInteger();

  @BeforeEach
  void setUp(DataSource ds) {
    handled.set(0);
  }

  private CommandQueue queue(DataSource ds, boolean history) {
    CommandQueue.Builder b = CommandQueue.builder(ds).codec(Fixtures.CODEC).schema(SCHEMA);
    return history ? b.history(true).build() : b.build();
  }

  private void drain(DataSource ds, CommandQueue queue, int expected) {
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  if (c.orderId().startsWith("poison")) {
                    throw new IllegalStateException("poison");
                  }
                  if (c.orderId().startsWith("flaky") && ctx.attempt() == 1) {
                    throw new IllegalStateException("first attempt");
                  }
                  if (c.orderId().startsWith("slow")) {
                    Thread.sleep(30);
                  }
                  handled.incrementAndGet();
                })
            .build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("history")
            .driver(queue.driver(handlers))
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(50), Duration.ofMillis(100))
            .maxFailures(2)
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> handled.get() == expected && queue.operations().deadLetters().count() == 1);
    }
  }

  private static void enqueueFive(CommandQueue queue) {
    queue.enqueue(new PlaceOrder("plain"));
    queue.enqueue(new PlaceOrder("keyed"), EnqueueOptions.defaults().withIdempotencyKey("k-1"));
    queue.enqueue(new PlaceOrder("flaky"));
    queue.enqueue(new PlaceOrder("slow"));
    queue.enqueue(new PlaceOrder("poison"));
  }

  @Test
  void offByDefaultNothingIsWritten(DataSource ds) {
    CommandQueue queue = queue(ds, false);
    assertThat(queue.keepsHistory()).isFalse();
    enqueueFive(queue);
    drain(ds, queue, 4);
    assertThat(count(ds, "SELECT count(*) FROM history.command_history")).isZero();
    assertThat(queue.operations().history(null, 10)).isEmpty();
  }

  @Test
  void whenEnabledEachHandledCommandIsRecordedAndPagedNewestFirst(DataSource ds) {
    CommandQueue queue = queue(ds, true);
    assertThat(queue.keepsHistory()).isTrue();
    enqueueFive(queue);
    // A duplicate enqueue returns the id of the command holding the key.
    UUID keyed =
        queue
            .enqueue(new PlaceOrder("keyed"), EnqueueOptions.defaults().withIdempotencyKey("k-1"))
            .messageId();
    drain(ds, queue, 4);
    // The parked command is not in the history: only handled ones are.
    assertThat(count(ds, "SELECT count(*) FROM history.command_history")).isEqualTo(4);
    List<HandledCommand> all = queue.operations().history(null, 10);
    assertThat(all).hasSize(4);
    assertThat(all)
        .isSortedAccordingTo(
            (a, b) ->
                b.handledAt().compareTo(a.handledAt()) != 0
                    ? b.handledAt().compareTo(a.handledAt())
                    : Long.compare(b.historyId(), a.historyId()));
    HandledCommand k =
        all.stream().filter(h -> "k-1".equals(h.idempotencyKey())).findFirst().orElseThrow();
    assertThat(k.messageId()).isEqualTo(keyed);
    assertThat(k.type()).isEqualTo("orders.PlaceOrder");
    assertThat(all).filteredOn(h -> h.attempts() == 2).hasSize(1);
    assertThat(all)
        .filteredOn(h -> h.attempts() == 2)
        .first()
        .satisfies(h -> assertThat(h.failures()).isEqualTo(1));
    // The slow handler slept 30 ms: its handling time says so.
    assertThat(all)
        .anySatisfy(h -> assertThat(h.handling()).isGreaterThanOrEqualTo(Duration.ofMillis(30)));

    List<HandledCommand> page1 = queue.operations().history(null, 3);
    List<HandledCommand> page2 = queue.operations().history(page1.get(2), 3);
    assertThat(page1).containsExactlyElementsOf(all.subList(0, 3));
    assertThat(page2).containsExactlyElementsOf(all.subList(3, 4));
  }
}
