package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;
import static org.messagepump.eventstream.Fixtures.queryLong;
import static org.messagepump.eventstream.Fixtures.queryStrings;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.Noise;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.StatementCapture;
import org.messagepump.testkit.TestDatabase;

/**
 * No data value is ever written into SQL text: every statement of a representative workload holds
 * only the code's own literals, an append of 100,000 events stays bound, and with {@code
 * standard_conforming_strings = off} values with backslashes and quotes round-trip exactly.
 */
@ExtendWith(PostgresExtension.class)
class EventSqlSafetyIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  /** Values that break out of a literal if ever inlined, under either string syntax. */
  private static final String CORRELATION = "x\\'; DELETE FROM eventstream.events; --";

  private static final String CAUSATION = "it's \\' a \"cause\"";
  private static final Map<String, String> HEADERS =
      Map.of("path", "C:\\temp\\x", "quote", "'); DROP TABLE eventstream.streams; --");
  private static final EventMetadata META = new EventMetadata(CORRELATION, CAUSATION, HEADERS);

  /**
   * The literals the code itself writes (the field of {@code date_part} in a claim's mark):
   * anything else is a data value.
   */
  private static final Set<String> ALLOWED = Set.of("'epoch'");

  private static MessagePump.Builder pump(DataSource ds, EventDriver driver) {
    return EventStoreFixture.pump(ds, driver).workers(2).batchSize(4).maxFailures(2);
  }

  /**
   * Appends, handles (maximal and minimal concurrency), fails, parks and resumes through a real
   * pump, and runs every checkpoint operation, all over a capturing data source.
   */
  private static void workload(DataSource ds, EventStore store, List<String> handled) {
    inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("o\\'3", 3), new Noise(4)), META));
    long stream = inTx(ds, tx -> store.createStream(tx));
    inTx(
        ds,
        tx ->
            store.appendTo(
                tx,
                stream,
                0,
                List.of(new OrderPlaced("o'1\\", 1), new OrderPlaced("poison'\\", 2)),
                META));
    inTx(ds, tx -> store.appendTo(tx, stream, List.of(new OrderPlaced("after", 5))));
    AtomicBoolean healed = new AtomicBoolean();
    EventDriver maximal =
        store.driver(
            "safety-max",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      if (e.orderId().startsWith("poison") && !healed.get()) {
                        throw new IllegalStateException("poison \\' \u0000 " + e.orderId());
                      }
                      handled.add("max:" + e.orderId());
                    })
                .build());
    EventDriver minimal =
        store.driver(
            "safety-min",
            EventHandlers.builder()
                .on(OrderPlaced.class, (e, ctx) -> handled.add("min:" + e.orderId()))
                .build(),
            EventDriverOptions.defaults()
                .withConcurrency(Concurrency.MINIMAL)
                .withHandlerLockWait(Duration.ofMillis(100)));
    EventOperations h = store.operations();
    try (MessagePump a = pump(ds, maximal).build();
        MessagePump b = pump(ds, minimal).build()) {
      a.start();
      b.start();
      await().atMost(WAIT).until(() -> h.parked("safety-max").size() == 1);
      await().atMost(WAIT).until(() -> h.lag("safety-min") == 0);
      assertThat(h.parked()).hasSize(1);
      assertThat(h.parked("safety-max").get(0).parkedReason()).contains("poison \\' \uFFFD");
      healed.set(true);
      assertThat(h.resume("safety-max", stream)).isTrue();
      await().atMost(WAIT).until(() -> h.lag("safety-max") == 0);
      assertThat(h.resumeAll("safety-max")).isZero();
      h.setCheckpoint("safety-max", stream, 3, 1);
      await().atMost(WAIT).until(() -> h.lag("safety-max") == 0);
      assertThat(h.reset("safety-min")).isEqualTo(2);
      await().atMost(WAIT).until(() -> h.lag("safety-min") == 0);
    }
    assertThat(h.handlerKeys()).containsExactly("safety-max", "safety-min");
    assertThat(h.checkpoints("safety-max")).hasSize(2);
    assertThat(store.operations().streams()).hasSize(2);
    StoredEvent first = store.operations().read(stream, 0, 10).get(0);
    assertThat(first.envelope().correlationId()).isEqualTo(CORRELATION);
    assertThat(first.envelope().causationId()).isEqualTo(CAUSATION);
    assertThat(first.envelope().headers()).isEqualTo(HEADERS);
    assertThat(store.decode(first)).isEqualTo(new OrderPlaced("o'1\\", 1));
  }

  @Test
  void aRepresentativeWorkloadWritesNoValueIntoSqlText(TestDatabase db) {
    EventOperations.of(db.dataSource(), "es_capture").migrate();
    StatementCapture capture = StatementCapture.of(db.dataSource());
    DataSource ds = capture.dataSource();
    EventStore store = EventStore.builder(ds, CODEC).schema("es_capture").build();
    List<String> handled = new CopyOnWriteArrayList<>();

    workload(ds, store, handled);

    assertThat(handled).contains("max:o'1\\", "max:poison'\\", "min:o\\'3", "min:after");
    assertThat(capture.statements()).hasSizeGreaterThan(20);
    assertThat(capture.statementsWithLiteralsOtherThan(ALLOWED)).isEmpty();
  }

  @Test
  void withStandardConformingStringsOffValuesRoundTripAndAHugeAppendStaysBound(TestDatabase db) {
    EventOperations.of(db.dataSource()).migrate();
    db.execute("ALTER DATABASE \"" + db.name() + "\" SET standard_conforming_strings = off");
    DataSource off = db.newDataSource("scs-off", 4);
    assertThat(queryStrings(off, "SHOW standard_conforming_strings")).containsExactly("off");
    EventStore store = EventStore.create(off, CODEC);

    int n = 100_000;
    List<Object> events = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      events.add(new Noise(i));
    }
    AppendResult r = inTx(off, tx -> store.append(tx, events, META));

    assertThat(r.firstOffset()).isZero();
    assertThat(r.nextOffset()).isEqualTo(n);
    assertThat(
            queryLong(
                off, "SELECT next_offset FROM eventstream.streams WHERE id = ?", r.streamId()))
        .isEqualTo(n);
    assertThat(
            queryLong(
                off,
                "SELECT count(*) FROM eventstream.events WHERE stream_id = ? AND correlation_id = ?"
                    + " AND causation_id = ? AND headers = ?::jsonb AND type = ?"
                    + " AND (convert_from(payload, 'UTF8')::jsonb ->> 'n')::bigint = stream_offset",
                r.streamId(),
                CORRELATION,
                CAUSATION,
                "{\"path\": \"C:\\\\temp\\\\x\", \"quote\": \"'); DROP TABLE eventstream.streams;"
                    + " --\"}",
                "test.Noise"))
        .isEqualTo(n);
    assertThat(
            queryLong(
                off,
                "SELECT count(DISTINCT stream_offset) FROM eventstream.events"
                    + " WHERE stream_id = ? AND stream_offset BETWEEN 0 AND ?",
                r.streamId(),
                n - 1))
        .isEqualTo(n);
    assertThat(queryLong(off, "SELECT count(*) FROM eventstream.events")).isEqualTo(n);
    assertThat(
            queryStrings(
                off,
                "SELECT message_id::text FROM eventstream.events WHERE stream_id = ?"
                    + " ORDER BY stream_offset",
                r.streamId()))
        .isEqualTo(r.messageIds());
    assertThat(
            queryLong(
                off,
                "SELECT latest_offset FROM eventstream.stream_types WHERE stream_id = ? AND type ="
                    + " ?",
                r.streamId(),
                "test.Noise"))
        .isEqualTo(n - 1);

    // Handle, fail and park on the same setting: values reach the handler exactly.
    List<String> handled = new CopyOnWriteArrayList<>();
    workload(off, store, handled);
    assertThat(handled).contains("max:o'1\\", "max:poison'\\", "min:o\\'3", "min:after");
    assertThat(queryLong(off, "SELECT count(*) FROM eventstream.streams")).isEqualTo(2);
    assertThat(queryLong(off, "SELECT count(*) FROM eventstream.events")).isEqualTo(n + 5);
  }
}
