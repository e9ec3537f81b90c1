package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The operators' index-based lag reads ({@code lagSummaries}, {@code behind}, {@code
 * parkedStreams}) agree with the exhaustive read of every checkpoint, whichever way a stream came
 * to lag: a parked stream, a checkpoint moved back (a pending row), events appended while no pump
 * ran (streams changed since the handler's horizon), a stream the handler has never seen.
 */
@ExtendWith(PostgresExtension.class)
class EventLagIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();

  private void append(DataSource ds, String key, long expected, int n) {
    inTx(
        ds,
        tx ->
            store.appendToKey(
                tx,
                key,
                expected,
                IntStream.range(0, n).mapToObj(i -> (Object) new OrderPlaced(key, i)).toList()));
  }

  private static MessagePump pump(DataSource ds, EventDriver driver) {
    return MessagePump.builder(ds)
        .name(driver.handlerKey())
        .driver(driver)
        .workers(1)
        .batchSize(10)
        .maxFailures(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(10), Duration.ofMillis(20))
        .build();
  }

  @Test
  void indexReadsAgreeWithEveryCheckpoint(TestDatabase db) {
    DataSource ds = db.dataSource();
    for (int i = 0; i < 12; i++) {
      append(ds, "order-" + i, 0, 1 + i % 4);
    }
    append(ds, "poison", 0, 3);
    long unkeyed = inTx(ds, tx -> store.createStream(tx));
    inTx(ds, tx -> store.appendTo(tx, unkeyed, List.of(new OrderPlaced("u", 0))));
    EventOperations handlers = store.operations();
    for (String key : List.of("alpha", "beta")) {
      EventDriver driver =
          store.driver(
              key,
              EventHandlers.builder()
                  .on(
                      OrderPlaced.class,
                      (e, ctx) -> {
                        if (e.orderId().equals("poison")) {
                          throw new IllegalStateException("poison for " + key);
                        }
                      })
                  .build());
      try (MessagePump p = pump(ds, driver)) {
        p.start();
        await()
            .atMost(WAIT)
            .until(
                () ->
                    handlers.checkpoints(key).stream()
                        .allMatch(c -> c.parked() || (c.tracked() && c.lag() == 0)));
      }
    }
    // Lag made three ways while no pump runs: appends (streams changed since the horizons), a
    // checkpoint moved back (a pending row), a stream no handler has seen.
    append(ds, "order-1", 2, 5);
    append(ds, "order-2", 3, 1);
    long third = store.operations().streamOf("order-3").orElseThrow();
    handlers.setCheckpoint("beta", third, 4, 1);
    append(ds, "newcomer", 0, 2);

    for (String key : List.of("alpha", "beta")) {
      List<Checkpoint> all = handlers.checkpoints(key);
      List<Checkpoint> expected =
          all.stream()
              .filter(c -> c.lag() > 0 || c.parked() || c.failures() > 0)
              .sorted(
                  Comparator.comparing(Checkpoint::parked)
                      .reversed()
                      .thenComparing(Comparator.comparingLong(Checkpoint::lag).reversed())
                      .thenComparingLong(Checkpoint::streamId))
              .toList();
      List<StreamLag> paged = new ArrayList<>();
      StreamLag.Cursor after = null;
      while (true) {
        List<StreamLag> page = handlers.behind(key, after, 2);
        paged.addAll(page);
        if (page.size() < 2) {
          break;
        }
        after = page.get(page.size() - 1).cursor();
      }
      assertThat(paged).extracting(StreamLag::checkpoint).containsExactlyElementsOf(expected);
      assertThat(paged.get(0).checkpoint().parked()).isTrue();
      assertThat(paged.get(0).streamKey()).isEqualTo("poison");
      assertThat(paged).extracting(StreamLag::streamKey).contains("order-1", "newcomer");

      HandlerLag summary =
          handlers.lagSummaries().stream()
              .filter(s -> s.handlerKey().equals(key))
              .findFirst()
              .orElseThrow();
      assertThat(summary)
          .isEqualTo(
              new HandlerLag(
                  key,
                  all.stream().filter(c -> c.lag() > 0).count(),
                  all.stream().filter(Checkpoint::parked).count(),
                  all.stream().mapToLong(Checkpoint::lag).sum(),
                  all.stream().mapToLong(Checkpoint::failures).sum()));
    }
    assertThat(handlers.lagSummaries())
        .extracting(HandlerLag::handlerKey)
        .containsExactly("alpha", "beta");
    assertThat(handlers.handlerKeys()).containsExactly("alpha", "beta");
    assertThat(store.operations().eventCount())
        .isEqualTo(store.operations().streams().stream().mapToLong(StreamInfo::nextOffset).sum())
        .isEqualTo(30 + 3 + 1 + 5 + 1 + 2);
    assertThat(handlers.lagSummaries().get(1).lag())
        .isEqualTo(handlers.lagSummaries().get(0).lag() + 3);

    List<StreamLag> parked = new ArrayList<>();
    StreamLag.Cursor after = null;
    while (true) {
      List<StreamLag> page = handlers.parkedStreams(after, 1);
      parked.addAll(page);
      if (page.isEmpty()) {
        break;
      }
      after = page.get(0).cursor();
    }
    assertThat(parked)
        .extracting(StreamLag::checkpoint)
        .containsExactlyElementsOf(handlers.parked());
  }

  @Test
  void theLagOfAHandlerWithoutHorizonCountsEveryStream(TestDatabase db) {
    DataSource ds = db.dataSource();
    append(ds, "a", 0, 2);
    append(ds, "b", 0, 3);
    long a = store.operations().streamOf("a").orElseThrow();
    // A checkpoint row written by hand for a handler with no row in handlers (as before horizons).
    db.execute(
        "INSERT INTO eventstream.handler_checkpoints (handler_key, stream_id, checkpoint_offset)"
            + " VALUES ('legacy', "
            + a
            + ", 1)");
    Map<String, Long> lagByKey = new HashMap<>();
    for (StreamLag s : store.operations().behind("legacy", null, 10)) {
      lagByKey.put(s.streamKey(), s.checkpoint().lag());
    }
    assertThat(lagByKey).containsExactlyInAnyOrderEntriesOf(Map.of("a", 1L, "b", 3L));
    assertThat(store.operations().lagSummaries())
        .containsExactly(new HandlerLag("legacy", 2, 0, 4, 0));
  }

  @Test
  void badInputIsRefusedBeforeAnythingIsSent() {
    EventOperations handlers = store.operations();
    StreamLag.Cursor other = new StreamLag.Cursor(false, 1, "other", 1);
    assertThatThrownBy(() -> handlers.behind("h", null, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> handlers.behind("h", null, EventOperations.MAX_PAGE + 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> handlers.behind("", null, 10))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> handlers.behind("h\0", null, 10))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> handlers.behind("h", other, 10))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> handlers.parkedStreams(null, -1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new StreamLag.Cursor(false, -1, "h", 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new StreamLag.Cursor(false, 1, null, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(handlers.behind("h", null, 10)).isEmpty();
    assertThat(handlers.lagSummaries()).isEmpty();
  }

  @Test
  void aHandlersGaugesReadItsLagAndTheAgeOfItsOldestUnreadEventFromOneSnapshot(TestDatabase db) {
    DataSource ds = db.dataSource();
    append(ds, "a", 0, 2);
    append(ds, "b", 0, 3);
    long a = store.operations().streamOf("a").orElseThrow();
    long b = store.operations().streamOf("b").orElseThrow();
    db.execute(
        "INSERT INTO eventstream.handler_checkpoints (handler_key, stream_id, checkpoint_offset)"
            + " VALUES ('legacy', "
            + a
            + ", 1)");
    // The first unread event of stream b is an hour old; stream a's (offset 1) is new.
    db.execute(
        "UPDATE eventstream.events SET recorded_at = now() - interval '1 hour'"
            + " WHERE stream_id = "
            + b
            + " AND stream_offset = 0");
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    EventStore.builder(ds, CODEC)
        .meterRegistry(registry)
        .build()
        .driver("legacy", EventHandlers.builder().on(OrderPlaced.class, (e, ctx) -> {}).build());
    java.util.function.ToDoubleFunction<String> gauge =
        name -> registry.get(name).tag("handler", "legacy").gauge().value();

    assertThat(gauge.applyAsDouble("messagepump.eventstream.lag")).isEqualTo(4);
    assertThat(gauge.applyAsDouble("messagepump.eventstream.lag.streams")).isEqualTo(2);
    assertThat(gauge.applyAsDouble("messagepump.eventstream.parked.streams")).isZero();
    assertThat(gauge.applyAsDouble("messagepump.eventstream.lag.age")).isBetween(3590.0, 3700.0);

    // Within the refresh interval every gauge reads the same snapshot.
    append(ds, "a", 2, 1);
    assertThat(gauge.applyAsDouble("messagepump.eventstream.lag")).isEqualTo(4);
    assertThat(store.operations().lagSummaries())
        .containsExactly(new HandlerLag("legacy", 2, 0, 5, 0));
  }
}
