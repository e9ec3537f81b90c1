package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.messagepump.eventstream.Fixtures.CODEC;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.eventstream.Fixtures.OpenTx;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.Fixtures.OrderShipped;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** What event-sourced services need: streams by aggregate key, and a new handler's start. */
@ExtendWith(PostgresExtension.class)
class EventSourcingIT {

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();
  private final List<String> seen = new ArrayList<>();

  @BeforeEach
  void clean(TestDatabase db) {
    seen.clear();
  }

  private EventDriver recording(String key, StartPosition start) {
    return store.driver(
        key,
        EventHandlers.builder()
            .on(OrderPlaced.class, (e, ctx) -> seen.add(e.orderId()))
            .on(OrderShipped.class, (e, ctx) -> seen.add("shipped " + e.orderId()))
            .build(),
        EventDriverOptions.defaults().withStartAt(start));
  }

  /** Appends to a key in its own committed transaction. */
  private AppendResult appendToKey(DataSource ds, String key, long expected, Object event) {
    try (OpenTx t = new OpenTx(ds)) {
      AppendResult r = store.appendToKey(t.tx, key, expected, List.of(event));
      t.commit();
      return r;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aKeyMapsToOneStreamWithAnExpectedOffsetPerKey(DataSource ds) {
    AppendResult first = appendToKey(ds, "order-1", 0, new OrderPlaced("1", 1));
    AppendResult other = appendToKey(ds, "order-2", 0, new OrderPlaced("2", 1));
    AppendResult second = appendToKey(ds, "order-1", 1, new OrderShipped("1"));

    assertThat(second.streamId()).isEqualTo(first.streamId());
    assertThat(other.streamId()).isNotEqualTo(first.streamId());
    assertThat(second.firstOffset()).isEqualTo(1);
    assertThat(store.operations().streamOf("order-1")).hasValue(first.streamId());
    assertThat(store.operations().streamOf("order-3")).isEmpty();
    assertThat(store.operations().readKey("order-1", 0, 10))
        .extracting(e -> e.envelope().type())
        .containsExactly("test.OrderPlaced", "test.OrderShipped");
    assertThat(store.operations().readKey("order-3", 0, 10)).isEmpty();

    // A stale version: conflict, nothing written.
    assertThatThrownBy(() -> appendToKey(ds, "order-1", 1, new OrderShipped("1")))
        .isInstanceOfSatisfying(
            OffsetConflictException.class,
            e -> {
              assertThat(e.streamKey()).isEqualTo("order-1");
              assertThat(e.actualNextOffset()).isEqualTo(2);
            });
    // A first append that expects history the key does not have.
    assertThatThrownBy(() -> appendToKey(ds, "order-9", 3, new OrderShipped("9")))
        .isInstanceOf(OffsetConflictException.class);
    assertThat(store.operations().streamOf("order-9")).isEmpty();
    // Bad input before anything is sent.
    assertThatThrownBy(() -> appendToKey(ds, "", 0, new OrderShipped("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("streamKey");
    assertThatThrownBy(() -> appendToKey(ds, "k", -1, new OrderShipped("x")))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(store.operations().readKey("order-1", 0, 10)).hasSize(2);
  }

  @Test
  void twoWritersCreatingOneKeyConcurrentlyGetOneStreamAndOneConflict(DataSource ds)
      throws Exception {
    try (OpenTx a = new OpenTx(ds)) {
      store.appendToKey(a.tx, "order-7", 0, List.of(new OrderPlaced("7a", 1)));
      CompletableFuture<AppendResult> b =
          CompletableFuture.supplyAsync(
              () -> appendToKey(ds, "order-7", 0, new OrderPlaced("7b", 1)));
      Thread.sleep(200); // b is waiting on the key's unique index (its outcome is asserted below)
      assertThat(b).isNotDone();
      a.commit();
      assertThatThrownBy(() -> b.get(30, TimeUnit.SECONDS))
          .hasCauseInstanceOf(OffsetConflictException.class);
    }
    assertThat(store.operations().readKey("order-7", 0, 10)).hasSize(1);
    assertThat(store.operations().streams()).hasSize(1); // b's own stream went with its rollback
  }

  @Test
  void aNewHandlerStartsAtTheBeginningOrAtTheEndOfEveryStream(DataSource ds) {
    appendToKey(ds, "o-1", 0, new OrderPlaced("past-1", 1));
    appendToKey(ds, "o-2", 0, new OrderPlaced("past-2", 1));
    EventDriver tail = recording("from-beginning", StartPosition.BEGINNING);
    EventDriver head = recording("from-end", StartPosition.END);
    PumpTester tailTester = PumpTester.builder(ds, tail).batchSize(10).build();
    PumpTester headTester = PumpTester.builder(ds, head).batchSize(10).build();

    headTester.drainUntilIdle(); // registers at the end: nothing of the past
    assertThat(seen).isEmpty();
    appendToKey(ds, "o-1", 1, new OrderShipped("new-1"));
    appendToKey(ds, "o-3", 0, new OrderPlaced("new-3", 1));
    headTester.drainUntilIdle();
    assertThat(seen).containsExactlyInAnyOrder("shipped new-1", "new-3");

    seen.clear();
    tailTester.drainUntilIdle();
    assertThat(seen).containsExactlyInAnyOrder("past-1", "past-2", "shipped new-1", "new-3");

    // The start applies once: a reset replays the head handler from 0 as any other.
    seen.clear();
    assertThat(store.operations().reset("from-end")).isEqualTo(3);
    headTester.drainUntilIdle();
    assertThat(seen).containsExactlyInAnyOrder("past-1", "past-2", "shipped new-1", "new-3");
  }
}
