package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** One row's content never stops acquisition; a handler's unprintable failure still parks. */
@ExtendWith(PostgresExtension.class)
class EventRobustnessIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();

  private static MessagePump.Builder pump(DataSource ds, EventDriver driver) {
    return EventStoreFixture.pump(ds, driver).workers(1).batchSize(10).maxFailures(3);
  }

  /** A new stream holding {@code n} events {@code prefix-0 .. prefix-(n-1)}; returns its id. */
  private long stream(DataSource ds, String prefix, int n) {
    return inTx(
        ds,
        tx -> {
          long id = store.createStream(tx);
          List<Object> events = new ArrayList<>();
          for (int i = 0; i < n; i++) {
            events.add(new OrderPlaced(prefix + "-" + i, i));
          }
          store.appendTo(tx, id, events);
          return id;
        });
  }

  @Test
  void headersOfTheWrongShapeParkTheirEventWhileEveryGoodEventIsHandledOnce(TestDatabase db) {
    DataSource ds = db.dataSource();
    List<Long> good = new ArrayList<>();
    for (int s = 0; s < 4; s++) {
      good.add(stream(ds, "good" + s, 6));
    }
    long array = stream(ds, "array", 4); // its last event gets {"trace":[1]}
    long object = stream(ds, "object", 3); // its last event gets {"trace":{"id":1}}
    db.execute(
        "UPDATE eventstream.events SET headers = '{\"trace\":[1]}'"
            + " WHERE stream_id = "
            + array
            + " AND stream_offset = 3");
    db.execute(
        "UPDATE eventstream.events SET headers = '{\"trace\":{\"id\":1}}'"
            + " WHERE stream_id = "
            + object
            + " AND stream_offset = 2");
    Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();
    EventDriver driver =
        store.driver(
            "robust",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) ->
                        handled
                            .computeIfAbsent(e.orderId(), k -> new AtomicInteger())
                            .incrementAndGet())
                .build());

    try (MessagePump p = pump(ds, driver).build()) {
      p.start();
      await().atMost(WAIT).until(() -> store.operations().parked("robust").size() == 2);
      await()
          .atMost(WAIT)
          .until(
              () ->
                  good.stream()
                      .allMatch(
                          id ->
                              store.operations().checkpoints("robust").stream()
                                  .anyMatch(c -> c.streamId() == id && c.lag() == 0)));
    }

    assertThat(handled).hasSize(4 * 6 + 3 + 2);
    assertThat(handled.values()).allMatch(n -> n.get() == 1);
    List<Checkpoint> parked = store.operations().parked("robust");
    assertThat(parked).extracting(Checkpoint::streamId).containsExactly(array, object);
    assertThat(parked).extracting(Checkpoint::offset).containsExactly(3L, 2L);
    assertThat(parked).allMatch(c -> c.failures() == 3);
    assertThat(parked)
        .allSatisfy(
            c ->
                assertThat(c.parkedReason())
                    .contains("stored headers are unreadable")
                    .doesNotContain("trace")
                    .doesNotContain("\"id\""));
    // Reading the stream names the bad event, not its data.
    assertThatThrownBy(() -> store.operations().read(array, 0, 10))
        .isInstanceOf(UndecodableMessageException.class)
        .hasMessageContaining("offset 3 of stream " + array)
        .hasMessageNotContaining("trace");
  }

  @Test
  void aHandlerFailingWithANulInItsMessageEndsParked(DataSource ds) {
    long id = stream(ds, "nul", 2);
    EventDriver driver =
        store.driver(
            "nul-reason",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      throw new IllegalStateException("bad\u0000byte \u0001 in " + e.orderId());
                    })
                .build());
    try (MessagePump p = pump(ds, driver).build()) {
      p.start();
      await().atMost(WAIT).until(() -> store.operations().parked("nul-reason").size() == 1);
    }
    Checkpoint parked = store.operations().parked("nul-reason").get(0);
    assertThat(parked.streamId()).isEqualTo(id);
    assertThat(parked.offset()).isZero();
    assertThat(parked.failures()).isEqualTo(3);
    assertThat(parked.parkedReason())
        .contains("bad\uFFFDbyte \uFFFD in nul-0")
        .doesNotContain("\u0000");
  }
}
