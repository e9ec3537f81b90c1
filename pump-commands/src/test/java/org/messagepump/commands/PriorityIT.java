package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.conf.ParamType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.internal.CommandQueries;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;

/**
 * Priorities through the real pump: within a type the highest priority is served first, one minute
 * of waiting is worth one level (so a low priority is never starved), and a command keeps its
 * priority when postponed, leased, parked and retried. The claim stays one index range scan.
 */
@ExtendWith(PostgresExtension.class)
class PriorityIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();
  private final List<String> handled = Collections.synchronizedList(new ArrayList<>());

  private CommandHandlers recording() {
    return CommandHandlers.builder()
        .on(PlaceOrder.class, (c, ctx) -> handled.add(c.orderId()))
        .build();
  }

  /** One worker, so the order of handling is the order of the claims. */
  private static MessagePump pump(DataSource ds, CommandDriver driver, int batchSize) {
    return MessagePump.builder(ds)
        .name("priorities")
        .driver(driver)
        .workers(1)
        .batchSize(batchSize)
        .pollInterval(Duration.ofMillis(50))
        .build();
  }

  private void drain(DataSource ds, CommandDriver driver, int batchSize, int expected) {
    try (MessagePump p = pump(ds, driver, batchSize)) {
      p.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.size() >= expected);
    }
    assertThat(handled).hasSize(expected);
  }

  /** A backlog of 30 priority-0 commands, then a raw one of priority 5 and a typed one of 9. */
  private List<String> backlogThenUrgent() {
    List<NewCommand> low = new ArrayList<>();
    List<String> expected = new ArrayList<>(List.of("urgent", "raw-5"));
    for (int i = 0; i < 30; i++) {
      low.add(NewCommand.of(new PlaceOrder("low-" + i)));
      expected.add("low-" + i);
    }
    queue.enqueueAll(low);
    queue.enqueueAll(
        List.of(
            NewCommand.raw(
                "orders.PlaceOrder",
                "{\"orderId\":\"raw-5\"}".getBytes(StandardCharsets.UTF_8),
                EnqueueOptions.defaults().withPriority(5))));
    queue.enqueue(new PlaceOrder("urgent"), EnqueueOptions.defaults().withPriority(9));
    return expected;
  }

  @Test
  void theHighestPriorityIsServedFirstThenTheBacklogInItsOrder(DataSource ds) {
    List<String> expected = backlogThenUrgent();
    // Batches of 5: the claim's order and the order within a claimed batch.
    drain(ds, queue.driver(recording()), 5, expected.size());
    assertThat(handled).containsExactlyElementsOf(expected);
  }

  @Test
  void leaseModeServesInTheSameOrder(DataSource ds) {
    List<String> expected = backlogThenUrgent();
    drain(
        ds,
        queue.driver(
            recording(), CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30))),
        5,
        expected.size());
    assertThat(handled).containsExactlyElementsOf(expected);
  }

  @Test
  void eachMinuteOfWaitingIsWorthOneLevelSoALowPriorityIsNeverStarved(DataSource ds) {
    // Due times a minute away from the rank of the urgent command on either side: far more than
    // any gap between this JVM's clock and the database's, or the time the test takes.
    Instant now = Instant.now();
    queue.enqueue(
        new PlaceOrder("waited-10-min"),
        EnqueueOptions.defaults().withDeliverAt(now.minus(Duration.ofMinutes(10))));
    queue.enqueue(
        new PlaceOrder("waited-8-min"),
        EnqueueOptions.defaults().withDeliverAt(now.minus(Duration.ofMinutes(8))));
    queue.enqueue(
        new PlaceOrder("priority-2-waited-8-min"),
        EnqueueOptions.defaults().withPriority(2).withDeliverAt(now.minus(Duration.ofMinutes(8))));
    queue.enqueue(new PlaceOrder("urgent"), EnqueueOptions.defaults().withPriority(9));
    drain(ds, queue.driver(recording()), 1, 4);
    // Ranks: -10, -8, -10 and -9 minutes; equal ranks in due order.
    assertThat(handled)
        .containsExactly("waited-10-min", "priority-2-waited-8-min", "urgent", "waited-8-min");
  }

  @Test
  void aPostponedParkedAndRetriedCommandKeepsItsPriority(DataSource ds) {
    CommandHandlers failing =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  throw new IllegalStateException("refused " + c.orderId());
                })
            .build();
    UUID id =
        queue
            .enqueue(new PlaceOrder("doomed"), EnqueueOptions.defaults().withPriority(7))
            .messageId();
    PumpTester tester =
        PumpTester.builder(ds, queue.driver(failing))
            .maxFailures(2)
            .backoff(Duration.ofMillis(10), Duration.ofMillis(10))
            .build();
    tester.runOnce();
    assertThat(priorityOf(ds, "commands", id)).isEqualTo(7); // postponed: re-inserted
    assertThat(Fixtures.failures(ds, id)).isEqualTo(1);
    await().atMost(Duration.ofSeconds(30)).until(() -> !tester.runOnce().isEmpty());
    assertThat(Fixtures.pending(ds)).isZero();
    assertThat(priorityOf(ds, "dead_letters", id)).isEqualTo(7);
    assertThat(queue.operations().deadLetters().retry(id)).isTrue();
    assertThat(priorityOf(ds, "commands", id)).isEqualTo(7);
    drain(ds, queue.driver(recording()), 1, 1);
  }

  @Test
  void leaseModeKeepsThePriorityWhenItPostponesAndParks(DataSource ds) {
    CommandHandlers failing =
        CommandHandlers.builder()
            .on(
                PlaceOrder.class,
                (c, ctx) -> {
                  handled.add(c.orderId());
                  throw new IllegalStateException("refused " + c.orderId());
                })
            .build();
    UUID id =
        queue
            .enqueue(new PlaceOrder("doomed"), EnqueueOptions.defaults().withPriority(3))
            .messageId();
    try (MessagePump p =
        MessagePump.builder(ds)
            .name("priorities-leased")
            .driver(
                queue.driver(
                    failing, CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30))))
            .workers(1)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(50), Duration.ofMillis(50))
            .maxFailures(2)
            .build()) {
      p.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> count(ds, "SELECT count(*) FROM commandqueue.dead_letters") == 1);
    }
    assertThat(handled).containsExactly("doomed", "doomed");
    assertThat(priorityOf(ds, "dead_letters", id)).isEqualTo(3);
  }

  @Test
  void delayedCommandsWithinTheirHeadStartAreSkippedOnTheIndex(DataSource ds) throws Exception {
    // 2,000 commands of priority 9 due in 5 minutes: their rank (5 - 9 = -4 minutes) is before
    // that of the due commands, of priority 0, so the scan passes them first. The due backlog
    // behind them makes the table large enough for the planner to prefer the index, as it does
    // for a queue of any size that counts.
    List<NewCommand> delayed = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      delayed.add(
          NewCommand.of(
              new PlaceOrder("later-" + i),
              EnqueueOptions.defaults().withPriority(9).withDelay(Duration.ofMinutes(5))));
    }
    queue.enqueueAll(delayed);
    queue.enqueue(new PlaceOrder("due"));
    Fixtures.execute(
        ds,
        "INSERT INTO commandqueue.commands (message_id, message_type, payload)"
            + " SELECT gen_random_uuid(), 'orders.PlaceOrder',"
            + " convert_to('{\"orderId\":\"backlog\"}', 'UTF8') FROM generate_series(1, 20000)");
    Fixtures.execute(ds, "ANALYZE commandqueue.commands");
    String plan;
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      String sql =
          CommandQueries.acquire(
                  Tx.of(c).dsl(), CommandTables.defaults(), List.of("orders.PlaceOrder"), 1)
              .getSQL(ParamType.INLINED);
      StringBuilder out = new StringBuilder();
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("EXPLAIN (ANALYZE, BUFFERS) " + sql)) {
        while (rs.next()) {
          out.append(rs.getString(1)).append('\n');
        }
      } finally {
        c.rollback();
      }
      plan = out.toString();
    }
    // The due check is an index condition, tested on the index tuple: no row of the 2,000 is
    // fetched from the table, none locked, none filtered out after a fetch.
    assertThat(plan)
        .as(plan)
        .contains("Index Scan using commands_ranked")
        .containsPattern("Index Cond: .*claim_rank <= .*deliver_at <= statement_timestamp\\(\\)")
        .doesNotContain("Rows Removed by Filter")
        .doesNotContain("Sort");
    var hits = java.util.regex.Pattern.compile("shared hit=(\\d+)(?: read=(\\d+))?").matcher(plan);
    assertThat(hits.find()).as(plan).isTrue();
    long blocks =
        Long.parseLong(hits.group(1)) + (hits.group(2) == null ? 0 : Long.parseLong(hits.group(2)));
    // The index's leaf pages holding 2,000 entries (about 20) and the one row's page; a fetch of
    // each delayed row would read about 2,000 blocks.
    assertThat(blocks).as(plan).isLessThan(100);
    PumpTester.builder(ds, queue.driver(recording())).build().runOnce();
    assertThat(handled).containsExactly("due");
  }

  @Test
  void aScheduleEnqueuesItsCommandsWithThePriorityOfItsDefinition(DataSource ds) {
    Fixtures.execute(ds, "TRUNCATE commandqueue.schedules");
    Schedule every =
        Schedule.every("priority-ticks", Duration.ofHours(1), new PlaceOrder("tick"))
            .withOptions(EnqueueOptions.defaults().withPriority(4));
    queue.defineSchedule(every);
    UUID first = queue.operations().schedules().trigger("priority-ticks").orElseThrow();
    assertThat(priorityOf(ds, "commands", first)).isEqualTo(4);
    // A definition that changes only the priority is stored.
    queue.defineSchedule(every.withOptions(EnqueueOptions.defaults().withPriority(6)));
    UUID second = queue.operations().schedules().trigger("priority-ticks").orElseThrow();
    assertThat(priorityOf(ds, "commands", second)).isEqualTo(6);
  }

  private static int priorityOf(DataSource ds, String table, UUID id) {
    return (int)
        count(ds, "SELECT priority FROM commandqueue." + table + " WHERE message_id = ?", id);
  }
}
