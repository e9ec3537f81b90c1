package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.DeliveryContext;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.core.engine.PumpTester.Result;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.Fixtures.OrderShipped;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;

/**
 * The handler's context through the real runner: the {@link DeliveryContext} view of a stored
 * event, and {@link EventContext#append} writing follow-up events in the delivery's transaction.
 */
@ExtendWith(PostgresExtension.class)
class EventContextIT {

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();

  /** Every stored event of a type, over all streams. */
  private List<StoredEvent> stored(String type) {
    List<StoredEvent> out = new ArrayList<>();
    for (StreamInfo s : store.operations().streams()) {
      for (StoredEvent e : store.operations().read(s.id(), 0, EventOperations.MAX_READ_LIMIT)) {
        if (e.envelope().type().equals(type)) {
          out.add(e);
        }
      }
    }
    return out;
  }

  private StoredEvent followUpOf(String orderId) {
    return stored("test.OrderShipped").stream()
        .filter(e -> ((OrderShipped) store.decode(e)).orderId().equals(orderId))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void theContextIsADeliveryContextOfTheStoredEvent(DataSource ds) {
    AppendResult r =
        inTx(
            ds,
            tx ->
                store.append(
                    tx,
                    List.of(new OrderPlaced("o-1", 1)),
                    new EventMetadata("corr-1", "cmd-9", Map.of("tenant", "t1"))));
    List<DeliveryContext> contexts = new ArrayList<>();
    EventDriver driver =
        store.driver(
            "ctx",
            EventHandlers.builder().on(OrderPlaced.class, (e, ctx) -> contexts.add(ctx)).build());

    assertThat(PumpTester.builder(ds, driver).build().runOnce())
        .extracting(Result::kind)
        .containsExactly(Kind.HANDLED);

    assertThat(contexts)
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.tx()).isNotNull();
              assertThat(c.attempt()).isEqualTo(1);
              assertThat(c.messageId()).isEqualTo(r.messageIds().get(0));
              assertThat(c.messageType()).isEqualTo("test.OrderPlaced");
              assertThat(c.correlationId()).isEqualTo("corr-1");
              assertThat(c.causationId()).isEqualTo("cmd-9");
              assertThat(c.headers()).containsExactly(Map.entry("tenant", "t1"));
            });
  }

  @Test
  void appendWritesFollowUpsCausedByTheEventInTheDeliveryTransaction(DataSource ds) {
    AppendResult correlated =
        inTx(
            ds,
            tx ->
                store.append(
                    tx,
                    List.of(new OrderPlaced("correlated", 1)),
                    EventMetadata.of("corr-1", null)));
    AppendResult plain =
        inTx(
            ds,
            tx ->
                store.append(tx, List.of(new OrderPlaced("plain", 2), new OrderPlaced("own", 3))));
    inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("fails", 4))));
    EventDriver driver =
        store.driver(
            "follow-ups",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      switch (e.orderId()) {
                        case "own" ->
                            ctx.append(
                                List.of(new OrderShipped("own")),
                                new EventMetadata("mine", "ignored", Map.of("by", "test")));
                        case "fails" -> {
                          ctx.append(List.of(new OrderShipped("fails")));
                          throw new IllegalStateException("after appending");
                        }
                        default -> ctx.append(List.of(new OrderShipped(e.orderId())));
                      }
                    })
                .build());

    List<Result> results = PumpTester.builder(ds, driver).batchSize(10).build().drainUntilIdle();

    assertThat(results)
        .extracting(
            r ->
                ((OrderPlaced)
                            CODEC.decode(
                                r.delivery().messageType(), r.delivery().envelope().payload()))
                        .orderId()
                    + ":"
                    + r.kind())
        .contains("correlated:HANDLED", "plain:HANDLED", "own:HANDLED", "fails:FAILED");
    // The correlation id is inherited, the causation id is the event's own.
    StoredEvent a = followUpOf("correlated");
    assertThat(a.envelope().correlationId()).isEqualTo("corr-1");
    assertThat(a.envelope().causationId()).isEqualTo(correlated.messageIds().get(0));
    // An event without a correlation id starts the conversation.
    StoredEvent b = followUpOf("plain");
    assertThat(b.envelope().correlationId()).isEqualTo(plain.messageIds().get(0));
    assertThat(b.envelope().causationId()).isEqualTo(plain.messageIds().get(0));
    // Metadata given to append: its correlation id and headers; the causation is still the event.
    StoredEvent c = followUpOf("own");
    assertThat(c.envelope().correlationId()).isEqualTo("mine");
    assertThat(c.envelope().causationId()).isEqualTo(plain.messageIds().get(1));
    assertThat(c.envelope().headers()).containsExactly(Map.entry("by", "test"));
    // A handler that fails after appending: its follow-up is rolled back with its other writes.
    assertThat(stored("test.OrderShipped")).hasSize(3);
  }
}
