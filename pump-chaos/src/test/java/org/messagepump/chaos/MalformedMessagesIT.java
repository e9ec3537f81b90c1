package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 5: 1% malformed commands (bad JSON, a type the consumer cannot resolve, oversized) among
 * good ones: every good one handled, every bad one parked with its reason, throughput within 20% of
 * a clean run.
 *
 * <p>The 20% bound is the full run's ({@code -Pchaos}: 10,000 commands, runs of several seconds).
 * The fast run in the default build drains 3,000 commands in about 3 s on a shared 2-core machine,
 * where one run of each kind varies by more than 20% (a CI run measured 0.77 on a commit whose full
 * run gave 1.09). There the bound is 0.5, which still fails if malformed messages loop hot or hold
 * the workers back, and the measured ratio is written to the report.
 */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class MalformedMessagesIT {

  /** A type the producer knows and the consumer does not (as after a half-finished rename). */
  record Legacy(long n) {}

  static final int CONSUMER_LIMIT = 64 * 1024;

  static final JsonMessageCodec PRODUCER =
      JsonMessageCodec.of(
          MessageTypes.builder().register(Work.class, Work.TYPE).register(Legacy.class).build());

  @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(PRODUCER);

  /** The consumer's codec: cannot resolve {@link Legacy}, refuses payloads over 64 KiB. */
  static final class ConsumerCodec implements MessageCodec {
    @Override
    public String typeOf(Class<?> messageClass) {
      return PRODUCER.typeOf(messageClass);
    }

    @Override
    public Class<?> classOf(String type) {
      if (type.equals(PRODUCER.typeOf(Legacy.class))) {
        throw new UnknownMessageTypeException("message type '" + type + "' is not registered");
      }
      return PRODUCER.classOf(type);
    }

    @Override
    public byte[] encode(Object message) {
      return PRODUCER.encode(message);
    }

    @Override
    public Object decode(String type, byte[] payload) {
      if (payload.length > CONSUMER_LIMIT) {
        throw new UndecodableMessageException(
            "oversized payload: " + payload.length + " bytes > " + CONSUMER_LIMIT, null);
      }
      classOf(type);
      return PRODUCER.decode(type, payload);
    }
  }

  @Test
  void malformedMessagesAreParkedAndTheRestFlows(TestDatabase db) {
    int total = Chaos.size(10_000, 3_000);
    int bad = total / 100;
    CommandQueue producer = COMMANDS.queue();
    CommandQueue consumer = CommandQueue.create(db.dataSource(), new ConsumerCodec());
    Ledger ledger = Ledger.install(db.dataSource());

    // Clean and dirty runs alternate; the best rate of each kind is compared.
    int rounds = Chaos.full() ? 2 : 3;
    double minimumRatio = Chaos.full() ? 0.8 : 0.5;
    double clean = 0;
    double dirty = 0;
    long parked = 0;
    long parkedWithReason = 0;
    Ledger.Figures f = null;
    for (int round = 0; round < rounds; round++) {
      clean = Math.max(clean, run(db, producer, consumer, ledger, total, 0));
      f = ledger.figures();
      assertThat(f.exactlyOnce()).as("clean run exactly once").isTrue();
      dirty = Math.max(dirty, run(db, producer, consumer, ledger, total, bad));
      f = ledger.figures();
      parked = db.queryLong("SELECT count(*) FROM commandqueue.dead_letters");
      parkedWithReason =
          db.queryLong(
              "SELECT count(*) FROM commandqueue.dead_letters WHERE"
                  + " (message_type = 'chaos.Work' AND length(payload) <= "
                  + CONSUMER_LIMIT
                  + " AND last_error LIKE 'Undecodable%')"
                  + " OR (message_type <> 'chaos.Work' AND last_error LIKE 'UnknownMessageType%')"
                  + " OR (length(payload) > "
                  + CONSUMER_LIMIT
                  + " AND last_error LIKE '%oversized payload%')");
      assertThat(f.lost()).as("good commands lost").isZero();
      assertThat(f.duplicates()).as("duplicates").isZero();
      assertThat(parked).as("bad commands parked").isEqualTo(bad);
      assertThat(parkedWithReason).as("parked with the right reason").isEqualTo(bad);
    }
    double ratio = dirty / clean;
    ChaosReport.of("5-malformed")
        .put("commands", total)
        .put("malformed", bad)
        .put(f)
        .put("parked", parked)
        .put("parkedWithReason", parkedWithReason)
        .put("cleanPerSecond", Math.round(clean))
        .put("dirtyPerSecond", Math.round(dirty))
        .put("throughputRatio", Math.round(ratio * 100) / 100.0)
        .write();
    assertThat(ratio).as("dirty/clean throughput").isGreaterThanOrEqualTo(minimumRatio);
  }

  /**
   * Enqueues {@code total} commands ({@code bad} of them malformed), drains them, returns good/s.
   */
  private static double run(
      TestDatabase db,
      CommandQueue producer,
      CommandQueue consumer,
      Ledger ledger,
      int total,
      int bad) {
    db.execute("TRUNCATE commandqueue.commands, commandqueue.dead_letters");
    ledger.reset();
    int good = total - bad;
    int step = bad == 0 ? Integer.MAX_VALUE : total / bad;
    long n = 0;
    for (int i = 0; i < total; i++) {
      if (i % step == step - 1) {
        int kind = (i / step) % 3;
        if (kind == 0) {
          producer.enqueueRaw(Work.TYPE, bytes("{\"n\": oops"), EnqueueOptions.defaults());
        } else if (kind == 1) {
          producer.enqueue(new Legacy(i));
        } else {
          producer.enqueueRaw(
              Work.TYPE,
              bytes("{\"n\":" + i + ",\"pad\":\"" + "x".repeat(100_000) + "\"}"),
              EnqueueOptions.defaults());
        }
      } else {
        n++;
      }
    }
    for (long from = 0; from < n; from += 1_000) {
      Chaos.enqueue(consumer, ledger, 1_000_000 + from, 1_000_000 + Math.min(n, from + 1_000));
    }
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Work.class,
                (w, ctx) ->
                    Ledger.record(
                        ctx.tx().connection(), ctx.messageId().toString(), ctx.attempt(), "m"))
            .on(Legacy.class, (w, ctx) -> {})
            .build();
    MessagePump pump =
        MessagePump.builder(db.dataSource())
            .name("malformed")
            .driver(consumer.driver(handlers))
            .workers(4)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(10), Duration.ofMillis(50))
            .maxFailures(3)
            .build();
    long start = System.nanoTime();
    pump.start();
    try {
      await()
          .atMost(Duration.ofSeconds(180))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> ledger.figures().handled() >= good);
      double seconds = (System.nanoTime() - start) / 1e9;
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.queryLong("SELECT count(*) FROM commandqueue.commands") == 0);
      return good / seconds;
    } finally {
      pump.close();
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
