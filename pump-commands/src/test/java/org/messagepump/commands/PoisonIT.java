package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.commands.Fixtures.count;
import static org.messagepump.commands.Fixtures.pending;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/** Undecodable payloads and unknown types are counted failures: parked or backed off, never hot. */
@ExtendWith(PostgresExtension.class)
class PoisonIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  record Legacy(String id) {}

  private static final JsonMessageCodec FULL =
      JsonMessageCodec.of(
          MessageTypes.builder()
              .register(PlaceOrder.class, "orders.PlaceOrder")
              .register(Legacy.class, "legacy.Old")
              .build());

  /**
   * A codec whose decoding side lost a type (as after a half-finished rename): it still encodes
   * {@link Legacy} as "legacy.Old" but cannot resolve that name any more.
   */
  static final class HalfRenamedCodec implements MessageCodec {
    @Override
    public String typeOf(Class<?> messageClass) {
      return FULL.typeOf(messageClass);
    }

    @Override
    public Class<?> classOf(String type) {
      if (type.equals("legacy.Old")) {
        throw new UnknownMessageTypeException("message type 'legacy.Old' is not registered");
      }
      return FULL.classOf(type);
    }

    @Override
    public byte[] encode(Object message) {
      return FULL.encode(message);
    }

    @Override
    public Object decode(String type, byte[] payload) {
      classOf(type);
      return FULL.decode(type, payload);
    }
  }

  private CommandQueue queue;
  private SimpleMeterRegistry registry;
  private final AtomicInteger handled = new AtomicInteger();

  @BeforeEach
  void setUp(DataSource ds) {
    registry = new SimpleMeterRegistry();
    queue = CommandQueue.builder(ds).codec(new HalfRenamedCodec()).meterRegistry(registry).build();
    handled.set(0);
  }

  private MessagePump pump(DataSource ds, int maxFailures, Duration base, Duration cap) {
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> handled.incrementAndGet())
            .on(Legacy.class, (c, ctx) -> handled.incrementAndGet())
            .build();
    return MessagePump.builder(ds)
        .name("poison")
        .driver(queue.driver(handlers))
        .workers(3)
        .pollInterval(Duration.ofMillis(50))
        .backoff(base, cap)
        .maxFailures(maxFailures)
        .build();
  }

  @Test
  void undecodablePayloadsAndUnknownTypesAreParkedWhileOtherCommandsFlow(DataSource ds) {
    List<NewCommand> batch = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      batch.add(NewCommand.of(new PlaceOrder("good-" + i)));
    }
    List<EnqueueResult> results = queue.enqueueAll(batch);
    UUID notJson =
        queue
            .enqueueRaw("orders.PlaceOrder", bytes("not json"), EnqueueOptions.defaults())
            .messageId();
    UUID wrongShape =
        queue
            .enqueueRaw(
                "orders.PlaceOrder",
                bytes("{\"orderId\":\"x\",\"extra\":1}"),
                EnqueueOptions.defaults())
            .messageId();
    UUID unknown = queue.enqueue(new Legacy("l-1")).messageId();
    for (int i = 40; i < 80; i++) {
      queue.enqueue(new PlaceOrder("good-" + i));
    }
    assertThat(results).hasSize(40);

    try (MessagePump pump = pump(ds, 3, Duration.ofMillis(50), Duration.ofMillis(200))) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> queue.operations().deadLetters().count() == 3 && pending(ds) == 0);
    }
    assertThat(handled).hasValue(80);
    DeadLetter a = queue.operations().deadLetters().find(notJson).orElseThrow();
    DeadLetter b = queue.operations().deadLetters().find(wrongShape).orElseThrow();
    DeadLetter c = queue.operations().deadLetters().find(unknown).orElseThrow();
    assertThat(a.failures()).isEqualTo(3);
    assertThat(a.lastError()).contains("UndecodableMessageException");
    assertThat(b.lastError()).contains("UndecodableMessageException").contains("extra");
    assertThat(c.failures()).isEqualTo(3);
    assertThat(c.lastError()).contains("UnknownMessageTypeException").contains("legacy.Old");
    assertThat(a.envelope().payload()).isEqualTo(bytes("not json"));
    assertThat(registry.get("messagepump.commands.parked").counter().count()).isEqualTo(3.0);
    assertThat(registry.get("messagepump.commands.deadletters").gauge().value()).isEqualTo(3.0);
    assertThat(
            registry
                .get("messagepump.commands.enqueued")
                .tag("result", "enqueued")
                .counter()
                .count())
        .isEqualTo(83.0);
  }

  @Test
  void withUnlimitedFailuresAPoisonCommandBacksOffInsteadOfLooping(DataSource ds) {
    Duration base = Duration.ofMillis(300);
    UUID poison =
        queue.enqueueRaw("orders.PlaceOrder", bytes("{{{"), EnqueueOptions.defaults()).messageId();
    long start = System.nanoTime();
    try (MessagePump pump = pump(ds, MessagePump.UNLIMITED_FAILURES, base, Duration.ofSeconds(1))) {
      pump.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> Fixtures.failures(ds, poison) >= 3);
      Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
      // Attempts 2 and 3 each waited at least the backoff base: no hot loop.
      assertThat(elapsed).isGreaterThanOrEqualTo(base.multipliedBy(2));
      assertThat(
              count(
                  ds,
                  "SELECT count(*) FROM commandqueue.commands"
                      + " WHERE message_id = ? AND deliver_at > enqueued_at",
                  poison))
          .isEqualTo(1);
      // Other commands keep flowing meanwhile.
      for (int i = 0; i < 20; i++) {
        queue.enqueue(new PlaceOrder("later-" + i));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> handled.get() == 20);
    }
    assertThat(queue.operations().deadLetters().count()).isZero();
    assertThat(pending(ds)).isEqualTo(1);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
