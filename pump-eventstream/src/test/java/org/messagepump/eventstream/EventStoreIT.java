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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.eventstream.Fixtures.Noise;
import org.messagepump.eventstream.Fixtures.OpenTx;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.Fixtures.OrderShipped;
import org.messagepump.eventstream.Fixtures.Unregistered;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
class EventStoreIT {

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();

  @BeforeAll
  static void migrate(DataSource ds) {
    EventOperations.of(ds).migrate(); // idempotent: the fixture migrated already
  }

  @Test
  void appendsAtomicallyWithGapFreeOffsetsAndMetadata(DataSource ds) {
    EventMetadata meta = new EventMetadata("corr-1", "cause-1", Map.of("tenant", "t1"));
    AppendResult r =
        inTx(
            ds,
            tx ->
                store.append(tx, List.of(new OrderPlaced("o1", 1), new OrderShipped("o1")), meta));
    AppendResult r2 = inTx(ds, tx -> store.appendTo(tx, r.streamId(), 2, List.of(new Noise(3))));

    assertThat(r.firstOffset()).isZero();
    assertThat(r.nextOffset()).isEqualTo(2);
    assertThat(r2.firstOffset()).isEqualTo(2);
    List<StoredEvent> events = store.operations().read(r.streamId(), 0, 100);
    assertThat(events).extracting(StoredEvent::offset).containsExactly(0L, 1L, 2L);
    StoredEvent first = events.get(0);
    assertThat(first.envelope().messageId()).isEqualTo(r.messageIds().get(0));
    assertThat(first.envelope().type()).isEqualTo("test.OrderPlaced");
    assertThat(first.envelope().correlationId()).isEqualTo("corr-1");
    assertThat(first.envelope().causationId()).isEqualTo("cause-1");
    assertThat(first.envelope().headers()).containsEntry("tenant", "t1");
    assertThat(first.envelope().createdAt()).isNotNull();
    assertThat(store.decode(first)).isEqualTo(new OrderPlaced("o1", 1));
    assertThat(store.operations().read(r.streamId(), 2, 1))
        .extracting(StoredEvent::offset)
        .containsExactly(2L);
    assertThat(store.operations().streams()).extracting(StreamInfo::nextOffset).containsExactly(3L);
  }

  @Test
  void appendToWithAStaleExpectedOffsetIsAConflictAndWritesNothing(DataSource ds) {
    AppendResult r = inTx(ds, tx -> store.append(tx, List.of(new Noise(1))));

    assertThatThrownBy(
            () -> inTx(ds, tx -> store.appendTo(tx, r.streamId(), 0, List.of(new Noise(2)))))
        .isInstanceOf(OffsetConflictException.class)
        .hasMessageContaining("expected next offset 0 but it is 1")
        .satisfies(e -> assertThat(((OffsetConflictException) e).actualNextOffset()).isEqualTo(1));
    assertThat(store.operations().read(r.streamId(), 0, 10)).hasSize(1);
    AppendResult ok = inTx(ds, tx -> store.appendTo(tx, r.streamId(), 1, List.of(new Noise(2))));
    assertThat(ok.firstOffset()).isEqualTo(1);
  }

  @Test
  void badInputIsRejectedAndNothingIsWritten(TestDatabase db) {
    DataSource ds = db.dataSource();
    long stream = inTx(ds, tx -> store.createStream(tx));
    assertThatThrownBy(() -> inTx(ds, tx -> store.append(tx, List.of())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("empty");
    assertThatThrownBy(() -> inTx(ds, tx -> store.append(tx, null)))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("events");
    List<Object> withNull = new ArrayList<>();
    withNull.add(new Noise(1));
    withNull.add(null);
    assertThatThrownBy(() -> inTx(ds, tx -> store.append(tx, withNull)))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("events[1] is null");
    assertThatThrownBy(
            () -> inTx(ds, tx -> store.append(tx, List.of(new Noise(1), new Unregistered(2)))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown type");
    assertThatThrownBy(() -> inTx(ds, tx -> store.appendTo(tx, stream, -1, List.of(new Noise(1)))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expectedNextOffset");
    assertThatThrownBy(() -> inTx(ds, tx -> store.appendTo(tx, 999_999, List.of(new Noise(1)))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not exist");
    assertThatThrownBy(() -> store.operations().read(stream, -1, 10))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.operations().read(stream, 0, 0))
        .isInstanceOf(IllegalArgumentException.class);

    assertThat(db.queryLong("SELECT count(*) FROM eventstream.events")).isZero();
    assertThat(db.queryLong("SELECT max(next_offset) FROM eventstream.streams")).isZero();
  }

  @Test
  void concurrentWritersTakeDifferentStreamsWithoutWaiting(DataSource ds) throws Exception {
    inTx(ds, tx -> store.append(tx, List.of(new Noise(0))));
    try (OpenTx holder = new OpenTx(ds)) {
      AppendResult held = store.append(holder.tx, List.of(new Noise(1)));
      // The only stream is held and not empty: a second writer creates a stream at once.
      AppendResult other =
          CompletableFuture.supplyAsync(
                  () -> inTx(ds, tx -> store.append(tx, List.of(new Noise(2)))))
              .get(60, TimeUnit.SECONDS);
      assertThat(other.streamId()).isNotEqualTo(held.streamId());
      assertThat(other.firstOffset()).isZero();
      holder.commit();
      assertThat(store.operations().read(held.streamId(), 0, 10)).hasSize(2);
    }
  }

  @Test
  void aWriterWaitsForAHeldStreamWhenAnEmptyStreamExists(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    long empty = inTx(ds, tx -> store.createStream(tx));
    try (OpenTx holder = new OpenTx(ds)) {
      AppendResult held = store.append(holder.tx, List.of(new Noise(1)));
      assertThat(held.streamId()).isEqualTo(empty);
      CompletableFuture<AppendResult> waiting =
          CompletableFuture.supplyAsync(
              () -> inTx(ds, tx -> store.append(tx, List.of(new Noise(2)))));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                              + " AND wait_event_type = 'Lock'")
                      == 1);
      assertThat(waiting).isNotDone();
      holder.commit();
      AppendResult after = waiting.get(60, TimeUnit.SECONDS);
      assertThat(after.streamId()).isEqualTo(empty);
      assertThat(after.firstOffset()).isEqualTo(1);
    }
    assertThat(store.operations().streams()).hasSize(1);
  }
}
