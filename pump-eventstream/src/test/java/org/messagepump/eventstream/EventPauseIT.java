package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.Limits;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;

/**
 * The cluster-wide pause of a handler key: stored in {@code paused_handlers}, honoured by the claim
 * statement of every running pump, whichever store instance ("process") paused it.
 */
@ExtendWith(PostgresExtension.class)
class EventPauseIT {

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private static final Duration WAIT = Duration.ofSeconds(60);

  private static MessagePump pump(DataSource ds, EventDriver driver) {
    return EventStoreFixture.pump(ds, driver).workers(2).build();
  }

  private static void append(DataSource ds, EventStore store, int n, String prefix) {
    inTx(
        ds,
        tx -> {
          List<Object> events = new ArrayList<>();
          for (int i = 0; i < n; i++) {
            events.add(new OrderPlaced(prefix + i, i));
          }
          return store.append(tx, events);
        });
  }

  @Test
  void aPausedHandlerIsNotAcquiredByARunningPumpAndResumesWhereItStopped(DataSource ds) {
    EventStore mine = EventStore.create(ds, CODEC);
    // The operator's store: another instance, as in another process.
    EventStore operator = EventStore.create(ds, CODEC);
    AtomicInteger paused = new AtomicInteger();
    AtomicInteger other = new AtomicInteger();
    EventDriver pausedDriver =
        mine.driver(
            "billing",
            EventHandlers.builder()
                .on(OrderPlaced.class, (e, ctx) -> paused.incrementAndGet())
                .build());
    EventDriver otherDriver =
        mine.driver(
            "shipping",
            EventHandlers.builder()
                .on(OrderPlaced.class, (e, ctx) -> other.incrementAndGet())
                .build());
    try (MessagePump p1 = pump(ds, pausedDriver);
        MessagePump p2 = pump(ds, otherDriver)) {
      p1.start();
      p2.start();
      append(ds, mine, 5, "a");
      await().atMost(WAIT).until(() -> paused.get() == 5 && other.get() == 5);

      assertThat(operator.operations().pauseHandler("billing", "ledger maintenance")).isTrue();
      assertThat(operator.operations().pauseHandler("billing", "another reason")).isFalse();
      assertThat(operator.operations().pausedHandlers())
          .singleElement()
          .satisfies(
              h -> {
                assertThat(h.name()).isEqualTo("billing");
                assertThat(h.reason()).isEqualTo("ledger maintenance");
                assertThat(h.pausedAt()).isNotNull();
              });
      // Events appended in several transactions (several streams), while both pumps run.
      for (int i = 0; i < 4; i++) {
        append(ds, mine, 5, "b" + i + "-");
      }
      await().atMost(WAIT).until(() -> other.get() == 25);
      // The other handler drained 20 events; the paused one has had many polls meanwhile.
      await().pollDelay(Duration.ofMillis(500)).atMost(WAIT).until(() -> true);
      assertThat(paused.get()).isEqualTo(5);
      assertThat(mine.operations().lag("billing")).isEqualTo(20);

      assertThat(operator.operations().resumeHandler("billing")).isTrue();
      assertThat(operator.operations().resumeHandler("billing")).isFalse();
      assertThat(operator.operations().pausedHandlers()).isEmpty();
      await().atMost(WAIT).until(() -> paused.get() == 25);
      assertThat(mine.operations().lag("billing")).isZero();
    }
  }

  @Test
  void aKeyNotRegisteredYetMayBePausedAndItsFirstPumpWaits(DataSource ds) {
    EventStore store = EventStore.create(ds, CODEC);
    assertThat(store.operations().pauseHandler("late", null)).isTrue();
    append(ds, store, 3, "c");
    AtomicInteger seen = new AtomicInteger();
    try (MessagePump p =
        pump(
            ds,
            store.driver(
                "late",
                EventHandlers.builder()
                    .on(OrderPlaced.class, (e, ctx) -> seen.incrementAndGet())
                    .build()))) {
      p.start();
      await().pollDelay(Duration.ofMillis(500)).atMost(WAIT).until(() -> true);
      assertThat(seen.get()).isZero();
      assertThat(store.operations().pausedHandlers().get(0).reason()).isNull();
      store.operations().resumeHandler("late");
      await().atMost(WAIT).until(() -> seen.get() == 3);
    }
  }

  @Test
  void badKeysAndReasonsAreRefusedBeforeAnythingIsSent(DataSource ds) {
    EventStore store = EventStore.create(ds, CODEC);
    String longKey = "k".repeat(Limits.MAX_KEY_BYTES + 1);
    for (String bad : new String[] {null, "", "   ", "a\0b", longKey}) {
      assertThatThrownBy(() -> store.operations().pauseHandler(bad, "r"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("handlerKey");
      assertThatThrownBy(() -> store.operations().resumeHandler(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("handlerKey");
    }
    assertThatThrownBy(() -> store.operations().pauseHandler("k", "r\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reason");
    assertThatThrownBy(
            () -> store.operations().pauseHandler("k", "r".repeat(Limits.MAX_REASON_CHARS + 1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reason");
    assertThat(store.operations().pausedHandlers()).isEmpty();
    // A quote in a key is data, bound, not SQL.
    assertThat(store.operations().pauseHandler("o'brien\"; DROP TABLE x; --", "r")).isTrue();
    assertThat(store.operations().pausedHandlers().get(0).name())
        .isEqualTo("o'brien\"; DROP TABLE x; --");
  }
}
