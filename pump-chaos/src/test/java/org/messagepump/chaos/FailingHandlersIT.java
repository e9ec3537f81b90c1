package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 6: handlers that fail by rule (n % 10 fail twice, n % 100 always) with maxFailures 5:
 * attempts exactly as the policy says, exactly 1% parked, no duplicates.
 */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class FailingHandlersIT {

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Work.CODEC);

  private static final int MAX_FAILURES = 5;

  @Test
  void failuresFollowThePolicyExactly(TestDatabase db) {
    int commands = Chaos.size(10_000, 1_000);
    CommandQueue queue = COMMANDS.queue();
    Ledger ledger = Ledger.install(db.dataSource());
    ledger.reset();
    for (int i = 0; i < commands; i += 1_000) {
      Chaos.enqueue(queue, ledger, i, Math.min(commands, i + 1_000));
    }
    Map<Long, AtomicInteger> invocations = new ConcurrentHashMap<>();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Work.class,
                (w, ctx) -> {
                  invocations.computeIfAbsent(w.n(), k -> new AtomicInteger()).incrementAndGet();
                  if (w.n() % 100 == 0) {
                    throw new IllegalStateException("rule: " + w.n() + " % 100 always fails");
                  }
                  if (w.n() % 10 == 0 && ctx.attempt() <= 2) {
                    throw new IllegalStateException("rule: " + w.n() + " % 10 fails twice");
                  }
                  Ledger.record(
                      ctx.tx().connection(), ctx.messageId().toString(), ctx.attempt(), "rules");
                })
            .build();
    MessagePump pump =
        MessagePump.builder(db.dataSource())
            .name("rules")
            .driver(queue.driver(handlers))
            .workers(4)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(10), Duration.ofMillis(100))
            .maxFailures(MAX_FAILURES)
            .build();
    pump.start();
    try {
      await()
          .atMost(Duration.ofSeconds(180))
          .pollInterval(Duration.ofMillis(200))
          .until(() -> db.queryLong("SELECT count(*) FROM commandqueue.commands") == 0);
    } finally {
      pump.close();
    }

    int always = commands / 100;
    int twice = commands / 10 - always;
    long wrongInvocations =
        invocations.entrySet().stream()
            .filter(e -> e.getValue().get() != expectedAttempts(e.getKey()))
            .count();
    long parked = db.queryLong("SELECT count(*) FROM commandqueue.dead_letters");
    long parkedRight =
        db.queryLong(
            "SELECT count(*) FROM commandqueue.dead_letters WHERE failures = "
                + MAX_FAILURES
                + " AND last_error LIKE '%100 always fails%'");
    long wrongAttemptRows =
        ledger.queryLong("SELECT count(*) FROM chaos.ledger WHERE attempt NOT IN (1, 3)");
    long thirdAttempts = ledger.queryLong("SELECT count(*) FROM chaos.ledger WHERE attempt = 3");
    long lostNotParked =
        ledger.queryLong(
            "SELECT count(*) FROM chaos.acknowledged a WHERE NOT EXISTS (SELECT 1 FROM"
                + " chaos.ledger l WHERE l.message_id = a.message_id) AND NOT EXISTS (SELECT 1"
                + " FROM commandqueue.dead_letters d WHERE d.message_id::text = a.message_id)");
    Ledger.Figures f = ledger.figures();
    ChaosReport.of("6-failing-handlers")
        .put("commands", commands)
        .put("maxFailures", MAX_FAILURES)
        .put(f)
        .put("parked", parked)
        .put("parkedWithReason", parkedRight)
        .put("handledOnThirdAttempt", thirdAttempts)
        .put("invocations", invocations.values().stream().mapToInt(AtomicInteger::get).sum())
        .put("idsWithWrongAttemptCount", wrongInvocations)
        .put("lostNotParked", lostNotParked)
        .write();
    assertThat(invocations).hasSize(commands);
    assertThat(wrongInvocations).as("ids whose attempts differ from the policy").isZero();
    assertThat(parked).as("parked (exactly 1%)").isEqualTo(always);
    assertThat(parkedRight).as("parked after 5 failures with the rule's reason").isEqualTo(always);
    assertThat(thirdAttempts).as("handled on the third attempt").isEqualTo(twice);
    assertThat(wrongAttemptRows).isZero();
    assertThat(f.handled()).isEqualTo(commands - always);
    assertThat(f.duplicates()).as("duplicates").isZero();
    assertThat(lostNotParked).as("neither handled nor parked").isZero();
  }

  private static int expectedAttempts(long n) {
    if (n % 100 == 0) {
      return MAX_FAILURES;
    }
    return n % 10 == 0 ? 3 : 1;
  }
}
