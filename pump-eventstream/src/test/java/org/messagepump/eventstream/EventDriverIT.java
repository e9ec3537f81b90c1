package org.messagepump.eventstream;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.core.engine.PumpTester.Result;
import org.messagepump.core.spi.Delivery;
import org.messagepump.eventstream.Fixtures.Noise;
import org.messagepump.eventstream.Fixtures.OpenTx;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.Fixtures.OrderShipped;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The driver through the pump's real poll path ({@link PumpTester}: acquire, handle in lazy
 * savepoints, record, complete, commit), one poll at a time, without threads.
 */
@ExtendWith(PostgresExtension.class)
class EventDriverIT {

  @RegisterExtension
  static final EventStoreFixture EVENTS =
      EventStoreFixture.of(CODEC)
          .table(
              "deferred_unique",
              "CREATE TABLE deferred_unique (k text CONSTRAINT deferred_unique_k UNIQUE"
                  + " DEFERRABLE INITIALLY DEFERRED)");

  private final EventStore store = EVENTS.store();
  private final List<String> seen = new ArrayList<>();

  @BeforeEach
  void clean(TestDatabase db) {
    seen.clear();
  }

  private EventDriver recording(String key) {
    return store.driver(
        key,
        EventHandlers.builder()
            .on(
                OrderPlaced.class,
                (e, ctx) -> seen.add(ctx.streamId() + ":" + ctx.offset() + ":" + e.orderId()))
            .build());
  }

  /** A tester of the real runner taking up to {@code max} deliveries per poll. */
  private static PumpTester tester(DataSource ds, EventDriver driver, int max) {
    return PumpTester.builder(ds, driver).batchSize(max).build();
  }

  /** One poll of the real runner: what became of each delivery. */
  private static List<Kind> poll(DataSource ds, EventDriver driver, int max) {
    return kinds(tester(ds, driver, max).runOnce());
  }

  private static List<Kind> kinds(List<Result> results) {
    return results.stream().map(Result::kind).toList();
  }

  private long checkpoint(String key, long stream) {
    return checkpointOf(key, stream).offset();
  }

  private Checkpoint checkpointOf(String key, long stream) {
    return store.operations().checkpoints(key).stream()
        .filter(c -> c.streamId() == stream)
        .findFirst()
        .orElseThrow();
  }

  @Test
  void deliversInOrderWithTheStreamPositionAndAdvancesTheCheckpoint(DataSource ds) {
    AppendResult r =
        inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1), new OrderPlaced("b", 2))));
    PumpTester tester = tester(ds, recording("h1"), 1);

    assertThat(tester.runOnce())
        .singleElement()
        .satisfies(
            res -> {
              assertThat(res.kind()).isEqualTo(Kind.HANDLED);
              Delivery d = res.delivery();
              assertThat(d.logKeys().get("streamId")).isEqualTo(Long.toString(r.streamId()));
              assertThat(d.logKeys().get("offset")).isEqualTo("0");
              assertThat(d.logKeys().get("checkpoint")).isEqualTo("0");
              assertThat(d.messageId()).isEqualTo(r.messageIds().get(0));
            });
    assertThat(kinds(tester.runOnce())).containsExactly(Kind.HANDLED);
    assertThat(tester.runOnce()).isEmpty();
    assertThat(seen).containsExactly(r.streamId() + ":0:a", r.streamId() + ":1:b");
    assertThat(checkpoint("h1", r.streamId())).isEqualTo(2);
    assertThat(store.operations().lag("h1")).isZero();
  }

  @Test
  void aRawHandlerGetsThePayloadBytesOfItsTypeNameEvenOneTheCodecDoesNotKnow(DataSource ds) {
    MessageCodec otherCodec =
        JsonMessageCodec.of(
            MessageTypes.builder().register(Fixtures.Unregistered.class, "other.Thing").build());
    EventStore other = EventStore.create(ds, otherCodec);
    AppendResult placed = inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1))));
    AppendResult thing = inTx(ds, tx -> other.append(tx, List.of(new Fixtures.Unregistered(7))));
    List<String> raw = new ArrayList<>();
    EventDriver driver =
        store.driver(
            "raw",
            EventHandlers.builder()
                .onRaw(
                    "other.Thing",
                    (bytes, ctx) -> raw.add(ctx.messageType() + ":" + new String(bytes, UTF_8)))
                .onRaw(
                    "test.OrderPlaced",
                    (bytes, ctx) -> raw.add(ctx.messageType() + ":" + new String(bytes, UTF_8)))
                .build());

    PumpTester tester = tester(ds, driver, 1);
    assertThat(kinds(tester.runOnce())).containsExactly(Kind.HANDLED);
    assertThat(kinds(tester.runOnce())).containsExactly(Kind.HANDLED);
    assertThat(tester.runOnce()).isEmpty();
    assertThat(raw)
        .containsExactlyInAnyOrder(
            "other.Thing:" + new String(otherCodec.encode(new Fixtures.Unregistered(7)), UTF_8),
            "test.OrderPlaced:" + new String(CODEC.encode(new OrderPlaced("a", 1)), UTF_8));
    assertThat(store.operations().lag("raw")).isZero();
  }

  @Test
  void aBatchTakesConsecutiveEventsOfAStreamAndAFailureStopsTheRest(DataSource ds) {
    AppendResult r =
        inTx(
            ds,
            tx ->
                store.append(
                    tx,
                    List.of(
                        new OrderPlaced("a", 1),
                        new Noise(0),
                        new OrderPlaced("fail", 2),
                        new OrderPlaced("c", 3))));
    EventDriver driver =
        store.driver(
            "batch",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      if (e.orderId().equals("fail")) {
                        throw new IllegalStateException("boom");
                      }
                      seen.add(e.orderId());
                    })
                .build());

    List<Result> batch = tester(ds, driver, 10).runOnce();

    assertThat(batch)
        .extracting(
            res ->
                res.delivery().logKeys().get("offset")
                    + "@"
                    + res.delivery().logKeys().get("checkpoint"))
        .containsExactly("0@0", "2@1", "3@3");
    // The event after the failed one is not handled (Busy), and its postponement records nothing:
    // the stream keeps the failure count and resume time of the failed event.
    assertThat(kinds(batch)).containsExactly(Kind.HANDLED, Kind.FAILED, Kind.BUSY);
    assertThat(batch.get(1).cause()).hasMessageContaining("boom");
    assertThat(seen).containsExactly("a");
    Checkpoint c = store.operations().checkpoints("batch").get(0);
    assertThat(c.offset()).isEqualTo(1);
    assertThat(c.failures()).isEqualTo(1);
    assertThat(c.resumeAt()).isBefore(Instant.now().plusSeconds(60));
    assertThat(r.nextOffset()).isEqualTo(4);
  }

  @Test
  void anUncommittedEventIsNeverSkippedWhenTheCheckpointAdvancesToTheEnd(DataSource ds)
      throws Exception {
    AppendResult r = inTx(ds, tx -> store.append(tx, List.of(new Noise(0), new Noise(1))));
    EventDriver driver = recording("h1");
    try (OpenTx writer = new OpenTx(ds)) {
      store.appendTo(writer.tx, r.streamId(), 2, List.of(new OrderPlaced("late", 2)));
      // The reader runs while the writer holds the stream: no wait, nothing of its type yet.
      assertThat(poll(ds, driver, 1)).isEmpty();
      assertThat(checkpoint("h1", r.streamId())).isEqualTo(2);
      writer.commit();
    }
    assertThat(poll(ds, driver, 1)).containsExactly(Kind.HANDLED);
    assertThat(seen).containsExactly(r.streamId() + ":2:late");
  }

  @Test
  void aTypeFilterAdvancesPastIrrelevantStreamsWithinOnePoll(DataSource ds) {
    List<Long> noiseStreams = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      long s = inTx(ds, tx -> store.createStream(tx));
      inTx(
          ds,
          tx -> store.appendTo(tx, s, List.of(new Noise(1), new Noise(2), new OrderShipped("x"))));
      noiseStreams.add(s);
    }
    long relevant = inTx(ds, tx -> store.createStream(tx));
    inTx(ds, tx -> store.appendTo(tx, relevant, List.of(new Noise(1), new OrderPlaced("p", 1))));
    EventDriver driver = recording("filtered");

    // One poll looks at streams until it finds the one event of its type.
    assertThat(poll(ds, driver, 1)).containsExactly(Kind.HANDLED);
    assertThat(seen).containsExactly(relevant + ":1:p");
    assertThat(poll(ds, driver, 1)).isEmpty();
    for (long s : noiseStreams) {
      assertThat(checkpoint("filtered", s)).isEqualTo(3);
    }
    assertThat(store.operations().lag("filtered")).isZero();
    // A new stream is picked up.
    inTx(ds, tx -> store.appendTo(tx, store.createStream(tx), List.of(new OrderPlaced("new", 1))));
    assertThat(poll(ds, driver, 4)).containsExactly(Kind.HANDLED);
    assertThat(seen).last().asString().endsWith(":0:new");
  }

  @Test
  void aProjectionReturningAnotherOffsetMovesTheCheckpointThere(DataSource ds) {
    AppendResult r =
        inTx(
            ds,
            tx ->
                store.append(
                    tx,
                    List.of(
                        new OrderPlaced("0", 0),
                        new OrderPlaced("1", 1),
                        new OrderPlaced("2", 2),
                        new OrderPlaced("3", 3),
                        new OrderPlaced("4", 4))));
    AtomicLong answer = new AtomicLong(-1);
    List<Long> offsets = new ArrayList<>();
    EventDriver driver =
        store.driver(
            "projection",
            EventHandlers.builder()
                .project(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      offsets.add(ctx.offset());
                      long a = answer.getAndSet(-1);
                      return a >= 0 ? a : ctx.nextOffset();
                    })
                .build());
    PumpTester tester = tester(ds, driver, 1);

    tester.runOnce(); // 0 -> checkpoint 1
    tester.runOnce(); // 1 -> checkpoint 2
    answer.set(4); // the projection already holds 2 and 3: skip them
    assertThat(kinds(tester.runOnce())).containsExactly(Kind.HANDLED); // 2 -> checkpoint 4
    assertThat(checkpoint("projection", r.streamId())).isEqualTo(4);
    answer.set(1); // the projection lost 1..3: replay from 1
    tester.runOnce(); // 4 -> checkpoint 1
    assertThat(checkpoint("projection", r.streamId())).isEqualTo(1);
    assertThat(kinds(tester.drainUntilIdle())).hasSize(4).containsOnly(Kind.HANDLED);
    assertThat(offsets).containsExactly(0L, 1L, 2L, 4L, 1L, 2L, 3L, 4L);
    assertThat(checkpoint("projection", r.streamId())).isEqualTo(5);
  }

  @Test
  void aFailurePostponesOnlyThatStreamForThatHandlerAndParkingIsPerHandler(DataSource ds) {
    long bad = inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("bad", 0)))).streamId();
    long good = inTx(ds, tx -> store.createStream(tx));
    inTx(ds, tx -> store.appendTo(tx, good, List.of(new OrderPlaced("good", 0))));
    EventDriver failing =
        store.driver(
            "failing",
            EventHandlers.builder()
                .on(
                    OrderPlaced.class,
                    (e, ctx) -> {
                      if (e.orderId().equals("bad")) {
                        throw new IllegalStateException("boom");
                      }
                      seen.add("failing:" + e.orderId());
                    })
                .build());
    PumpTester postponing =
        PumpTester.builder(ds, failing)
            .batchSize(2)
            .backoff(Duration.ofHours(1), Duration.ofHours(1))
            .build();

    // Both streams are read; the bad one is postponed by an hour, so nothing else is due.
    assertThat(kinds(postponing.drainUntilIdle()))
        .containsExactlyInAnyOrder(Kind.HANDLED, Kind.FAILED);
    assertThat(seen).containsExactly("failing:good");
    assertThat(checkpoint("failing", bad)).isZero();
    Checkpoint postponed = checkpointOf("failing", bad);
    assertThat(postponed.failures()).isEqualTo(1);
    assertThat(postponed.resumeAt()).isAfter(Instant.now().plusSeconds(3000));
    // The other handler reads both streams.
    assertThat(kinds(tester(ds, recording("other"), 2).drainUntilIdle()))
        .containsExactly(Kind.HANDLED, Kind.HANDLED);
    assertThat(seen).contains(bad + ":0:bad");

    // Park the bad stream for "failing" only (at its first failure), then resume it.
    store.operations().setCheckpoint("failing", bad, 0, 0); // unchanged, resets failures
    inTx(
        ds,
        tx -> tx.dsl().execute("UPDATE eventstream.handler_checkpoints SET resume_at = 'epoch'"));
    PumpTester parking = PumpTester.builder(ds, failing).batchSize(2).maxFailures(1).build();
    assertThat(parking.runOnce())
        .singleElement()
        .satisfies(
            res -> {
              assertThat(res.kind()).isEqualTo(Kind.PARKED);
              assertThat(res.cause()).hasMessage("boom");
            });
    assertThat(store.operations().parked("failing"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.streamId()).isEqualTo(bad);
              assertThat(c.parkedReason()).isEqualTo("IllegalStateException: boom");
              assertThat(c.failures()).isEqualTo(1);
              assertThat(c.lag()).isEqualTo(1);
            });
    assertThat(store.operations().parked()).hasSize(1);
    assertThat(store.operations().parked("other")).isEmpty();
    assertThat(parking.runOnce()).isEmpty();
    assertThat(store.operations().resume("failing", bad)).isTrue();
    assertThat(store.operations().resume("failing", bad)).isFalse();
    assertThat(store.operations().parked("failing")).isEmpty();
    // The resumed stream starts again from the event that failed, its failures reset.
    assertThat(parking.runOnce())
        .singleElement()
        .satisfies(
            res -> {
              assertThat(res.delivery().failures()).isZero();
              assertThat(res.delivery().logKeys().get("offset")).isEqualTo("0");
            });
  }

  @Test
  void resetReplaysAndSetCheckpointIsGuarded(DataSource ds) {
    AppendResult r =
        inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1), new OrderPlaced("b", 2))));
    PumpTester tester = tester(ds, recording("h1"), 1);
    assertThat(kinds(tester.drainUntilIdle())).containsExactly(Kind.HANDLED, Kind.HANDLED);
    assertThat(store.operations().handlerKeys()).containsExactly("h1");

    assertThat(store.operations().reset("h1")).isEqualTo(1);
    assertThat(store.operations().lag("h1")).isEqualTo(2);
    assertThat(kinds(tester.drainUntilIdle())).containsExactly(Kind.HANDLED, Kind.HANDLED);
    assertThat(seen).hasSize(4);

    assertThatThrownBy(() -> store.operations().setCheckpoint("h1", r.streamId(), 1, 0))
        .isInstanceOf(CheckpointConflictException.class)
        .hasMessageContaining("expected checkpoint 1 but it is 2");
    store.operations().setCheckpoint("h1", r.streamId(), 2, 1);
    assertThat(checkpoint("h1", r.streamId())).isEqualTo(1);
    // An untracked stream counts as 0.
    store.operations().setCheckpoint("h2", r.streamId(), 0, 2);
    assertThat(store.operations().checkpoints("h2"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.tracked()).isTrue();
              assertThat(c.offset()).isEqualTo(2);
            });
    assertThat(store.operations().checkpoints("h3"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.tracked()).isFalse();
              assertThat(c.lag()).isEqualTo(2);
            });
    assertThatThrownBy(() -> store.operations().setCheckpoint("h1", r.streamId(), -1, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.operations().setCheckpoint("h1", 424242, 0, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not exist");
  }

  @Test
  void anUndecodablePayloadFailsTheDelivery(TestDatabase db) {
    DataSource ds = db.dataSource();
    inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1))));
    db.execute("UPDATE eventstream.events SET payload = convert_to('{\"bad\":', 'UTF8')");

    assertThat(tester(ds, recording("h1"), 1).runOnce())
        .singleElement()
        .satisfies(
            res -> {
              assertThat(res.kind()).isEqualTo(Kind.FAILED);
              assertThat(res.cause()).isInstanceOf(UndecodableMessageException.class);
            });
    assertThat(seen).isEmpty();
    assertThat(store.operations().checkpoints("h1").get(0).failures()).isEqualTo(1);
  }

  @Test
  void minimalConcurrencyLetsOneTransactionAcquireAtATime(DataSource ds) throws Exception {
    inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("a", 1))));
    inTx(ds, tx -> store.appendTo(tx, store.createStream(tx), List.of(new OrderPlaced("b", 1))));
    EventDriver minimal =
        store.driver(
            "serial",
            EventHandlers.builder()
                .on(OrderPlaced.class, (e, ctx) -> seen.add(e.orderId()))
                .build(),
            EventDriverOptions.defaults()
                .withConcurrency(Concurrency.MINIMAL)
                .withHandlerLockWait(Duration.ofMillis(200)));
    PumpTester tester = tester(ds, minimal, 1);
    try (OpenTx holder = new OpenTx(ds)) {
      // Another pump's transaction has acquired an event and holds the handler lock meanwhile.
      assertThat(minimal.acquire(holder.tx, 1)).hasSize(1);
      // This poll waits 200 ms for the lock, then gives up: nothing, though a stream is free.
      assertThat(tester.runOnce()).isEmpty();
      assertThat(seen).isEmpty();
    } // rolled back: the lock is free again
    assertThat(kinds(tester.drainUntilIdle())).containsExactly(Kind.HANDLED, Kind.HANDLED);
    assertThat(seen).containsExactlyInAnyOrder("a", "b");
  }

  /** A new stream holding one {@link OrderPlaced} per id, in order; returns its id. */
  private long stream(DataSource ds, String... orderIds) {
    return inTx(
        ds,
        tx -> {
          long id = store.createStream(tx);
          List<Object> events = new ArrayList<>();
          for (String orderId : orderIds) {
            events.add(new OrderPlaced(orderId, 0));
          }
          store.appendTo(tx, id, events);
          return id;
        });
  }

  /**
   * A handler that inserts {@code <key>:<orderId>} into a table with a deferred unique constraint,
   * twice for "bad": only the commit fails, never the handler.
   */
  private EventDriver violatingAtCommit(String key, Map<String, Integer> calls) {
    return store.driver(
        key,
        EventHandlers.builder()
            .on(
                OrderPlaced.class,
                (e, ctx) -> {
                  calls.merge(e.orderId(), 1, Integer::sum);
                  try (var ps =
                      ctx.tx()
                          .connection()
                          .prepareStatement("INSERT INTO deferred_unique VALUES (?)")) {
                    ps.setString(1, key + ":" + e.orderId());
                    ps.executeUpdate();
                    if (e.orderId().equals("bad")) {
                      ps.executeUpdate();
                    }
                  }
                })
            .build());
  }

  /** Polls until {@code key} has a parked stream and then nothing is due (bounded). */
  private static List<Result> runUntilParkedAndIdle(PumpTester tester, EventStore store, String key)
      throws InterruptedException {
    List<Result> all = new ArrayList<>();
    for (int i = 0; i < 500 && store.operations().parked(key).isEmpty(); i++) {
      List<Result> r = tester.runOnce();
      if (r.isEmpty()) {
        Thread.sleep(5); // a postponed stream is due again after its (1 ms) backoff
      }
      all.addAll(r);
    }
    all.addAll(tester.drainUntilIdle());
    return all;
  }

  @Test
  void aCommitThatAlwaysFailsIsCountedInAFreshTransactionAndParksItsStreamAlone(TestDatabase db)
      throws Exception {
    DataSource ds = db.dataSource();
    long bad = stream(ds, "bad");
    List<Long> good = List.of(stream(ds, "good0"), stream(ds, "good1"), stream(ds, "good2"));
    Map<String, Integer> calls = new ConcurrentHashMap<>();
    PumpTester tester =
        PumpTester.builder(ds, violatingAtCommit("deferred", calls))
            .batchSize(1)
            .maxFailures(3)
            .backoff(Duration.ofMillis(1), Duration.ofMillis(1))
            .build();

    List<Result> results = runUntilParkedAndIdle(tester, store, "deferred");

    List<Kind> badFates =
        results.stream()
            .filter(r -> r.delivery().logKeys().get("streamId").equals(Long.toString(bad)))
            .map(Result::kind)
            .toList();
    // The first commit fails: the batch is abandoned and the pump counts the failure in a fresh
    // transaction (the driver's reacquire). From then on it checks each delivery's deferred
    // constraints at its end, so the next attempts fail alone, in their own transaction.
    assertThat(badFates).containsExactly(Kind.ABANDONED, Kind.FAILED, Kind.PARKED);
    // Three attempts park at maxFailures 3: the abandoned one was counted.
    assertThat(calls).containsEntry("bad", 3);
    assertThat(store.operations().parked("deferred"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.streamId()).isEqualTo(bad);
              assertThat(c.failures()).isEqualTo(3);
              assertThat(c.offset()).isZero();
              assertThat(c.parkedReason()).contains("deferred_unique_k");
            });
    // The other streams are handled once each, their writes committed.
    assertThat(calls).containsEntry("good0", 1).containsEntry("good1", 1).containsEntry("good2", 1);
    for (long s : good) {
      assertThat(checkpoint("deferred", s)).isEqualTo(1);
    }
    assertThat(Fixtures.queryStrings(ds, "SELECT k FROM deferred_unique WHERE k LIKE 'deferred:%'"))
        .containsExactlyInAnyOrder("deferred:good0", "deferred:good1", "deferred:good2");
    assertThat(store.operations().lag("deferred")).isEqualTo(1);

    // At maxFailures 1 the stream is parked by the fresh transaction itself.
    Map<String, Integer> once = new ConcurrentHashMap<>();
    PumpTester parkAtOnce =
        PumpTester.builder(ds, violatingAtCommit("at-once", once))
            .batchSize(1)
            .maxFailures(1)
            .build();
    List<Result> atOnce = runUntilParkedAndIdle(parkAtOnce, store, "at-once");
    assertThat(atOnce)
        .filteredOn(r -> r.delivery().logKeys().get("streamId").equals(Long.toString(bad)))
        .extracting(Result::kind)
        .containsExactly(Kind.ABANDONED);
    assertThat(once).containsEntry("bad", 1);
    assertThat(store.operations().parked("at-once"))
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.streamId()).isEqualTo(bad);
              assertThat(c.failures()).isEqualTo(1);
              assertThat(c.parkedReason()).contains("deferred_unique_k");
            });
  }

  @Test
  void reacquireLocksTheCheckpointOnlyWhenFreeAndStillWhereTheDeliveryExpectedIt(DataSource ds)
      throws Exception {
    long s = stream(ds, "a", "b");
    store
        .operations()
        .setCheckpoint("re", s, 0, 0); // tracked, so the rolled-back poll keeps the row
    EventDriver driver = recording("re");
    List<Delivery> stale;
    try (OpenTx t = new OpenTx(ds)) {
      stale = driver.acquire(t.tx, 2);
    } // rolled back, as after a failed commit
    assertThat(stale).hasSize(2);
    inTx(ds, tx -> tx.dsl().execute("UPDATE eventstream.handler_checkpoints SET failures = 2"));

    try (OpenTx holder = new OpenTx(ds);
        OpenTx t = new OpenTx(ds)) {
      holder.tx.dsl().execute("SELECT 1 FROM eventstream.handler_checkpoints FOR UPDATE");
      assertThat(driver.reacquire(t.tx, stale.get(0))).isEmpty(); // held: skipped, no wait
    }
    try (OpenTx t = new OpenTx(ds)) {
      // The second event expected the checkpoint at 1, where only the rolled-back batch put it.
      assertThat(driver.reacquire(t.tx, stale.get(1))).isEmpty();
      Delivery again = driver.reacquire(t.tx, stale.get(0)).orElseThrow();
      assertThat(again.messageId()).isEqualTo(stale.get(0).messageId());
      assertThat(again.failures()).isEqualTo(2);
      assertThat(again.logKeys()).isEqualTo(stale.get(0).logKeys());
      driver.postpone(t.tx, again, 3, Duration.ofMinutes(1));
      t.commit();
    }
    Checkpoint c = checkpointOf("re", s);
    assertThat(c.failures()).isEqualTo(3);
    assertThat(c.offset()).isZero();
    assertThat(c.resumeAt()).isAfter(Instant.now());

    store.operations().setCheckpoint("re", s, 0, 1); // moved on meanwhile
    try (OpenTx t = new OpenTx(ds)) {
      assertThat(driver.reacquire(t.tx, stale.get(0))).isEmpty();
    }

    // A stream first tracked by the rolled-back transaction: its checkpoint row went with it.
    EventDriver fresh = recording("fresh");
    Delivery first;
    try (OpenTx t = new OpenTx(ds)) {
      first = fresh.acquire(t.tx, 1).get(0);
    }
    assertThat(store.operations().handlerKeys()).doesNotContain("fresh");
    try (OpenTx t = new OpenTx(ds)) {
      Delivery again = fresh.reacquire(t.tx, first).orElseThrow();
      assertThat(again.failures()).isZero();
      fresh.park(t.tx, again, 1, "commit failed");
      t.commit();
    }
    assertThat(store.operations().parked("fresh"))
        .singleElement()
        .satisfies(p -> assertThat(p.parkedReason()).isEqualTo("commit failed"));
  }

  @Test
  void builderRejectsBadOptions() {
    EventHandlers noise = EventHandlers.builder().on(Noise.class, (e, c) -> {}).build();
    assertThatThrownBy(() -> store.driver(" ", noise))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerKey");
    EventHandlers unregistered =
        EventHandlers.builder().on(Fixtures.Unregistered.class, (e, c) -> {}).build();
    assertThatThrownBy(() -> store.driver("k", unregistered))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not registered");
    assertThatThrownBy(
            () ->
                EventHandlers.builder()
                    .on(Noise.class, (e, c) -> {})
                    .on(Noise.class, (e, c) -> {})
                    .build())
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> EventDriverOptions.defaults().withStreamsPerPoll(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("streamsPerPoll");
    assertThatThrownBy(() -> EventDriverOptions.defaults().withHandlerLockWait(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerLockWait");
    assertThatThrownBy(() -> store.driver("k", noise, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("options");
    assertThatThrownBy(() -> EventHandlers.builder().build())
        .isInstanceOf(IllegalStateException.class);
    EventHandlers twice =
        EventHandlers.builder()
            .on(OrderPlaced.class, (e, c) -> {})
            .onRaw("test.OrderPlaced", (b, c) -> {})
            .build();
    assertThatThrownBy(() -> store.driver("k", twice))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("test.OrderPlaced");
    assertThatThrownBy(
            () -> EventHandlers.builder().onRaw("x", (b, c) -> {}).onRaw("x", (b, c) -> {}).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("'x'");
  }
}
