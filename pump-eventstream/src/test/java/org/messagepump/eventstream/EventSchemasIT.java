package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;
import static org.messagepump.eventstream.Fixtures.queryLong;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.Pause;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.Noise;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Stores in separate schemas share nothing; a DML-only role runs a store and its checkpoints. */
@ExtendWith(PostgresExtension.class)
class EventSchemasIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  private static MessagePump.Builder pump(DataSource ds, EventDriver driver, String name) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(2)
        .batchSize(4)
        .maxFailures(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(10), Duration.ofMillis(50));
  }

  /** A driver "proj" recording what it handles, failing on order ids starting with "poison". */
  private static EventDriver driver(EventStore store, List<String> seen, AtomicBoolean healed) {
    return store.driver(
        "proj",
        EventHandlers.builder()
            .on(
                OrderPlaced.class,
                (e, ctx) -> {
                  if (e.orderId().startsWith("poison") && !healed.get()) {
                    throw new IllegalStateException("poisoned " + e.orderId());
                  }
                  seen.add(e.orderId());
                })
            .build());
  }

  @Test
  void twoStoresInTwoSchemasWithTheSameNamesNeverSeeEachOthersWork(TestDatabase db) {
    DataSource ds = db.dataSource();
    EventOperations.of(ds, "es_a").migrate();
    EventOperations.of(ds, "es_b").migrate();
    EventOperations.of(ds, "es_b").migrate(); // idempotent, with its own history table
    EventStore a = EventStore.builder(ds, CODEC).schema("es_a").build();
    EventStore b = EventStore.builder(ds, CODEC).schema("es_b").build();
    inTx(ds, tx -> a.append(tx, List.of(new OrderPlaced("a1", 1), new OrderPlaced("poison-a", 2))));
    inTx(ds, tx -> b.append(tx, List.of(new OrderPlaced("b1", 1), new OrderPlaced("b2", 2))));
    inTx(ds, tx -> b.append(tx, List.of(new Noise(3))));
    List<String> seenA = new CopyOnWriteArrayList<>();
    List<String> seenB = new CopyOnWriteArrayList<>();
    AtomicBoolean healed = new AtomicBoolean();

    try (MessagePump pa = pump(ds, driver(a, seenA, healed), "a").build();
        MessagePump pb = pump(ds, driver(b, seenB, healed), "b").build()) {
      pa.start();
      pb.start();
      await().atMost(WAIT).until(() -> a.operations().parked("proj").size() == 1);
      await().atMost(WAIT).until(() -> b.operations().lag("proj") == 0);
      assertThat(b.operations().parked()).isEmpty();
      assertThat(seenA).containsExactly("a1");
      assertThat(seenB).containsExactly("b1", "b2");
      // Resuming in one schema touches nothing in the other.
      healed.set(true);
      assertThat(b.operations().resumeAll("proj")).isZero();
      assertThat(a.operations().parked("proj")).hasSize(1);
      assertThat(a.operations().resumeAll("proj")).isEqualTo(1);
      await().atMost(WAIT).until(() -> a.operations().lag("proj") == 0);
      assertThat(b.operations().reset("proj")).isEqualTo(1);
      await().atMost(WAIT).until(() -> seenB.size() == 4);
    }
    assertThat(seenA).containsExactly("a1", "poison-a");
    assertThat(seenB).containsExactly("b1", "b2", "b1", "b2");
    assertThat(a.operations().streams()).extracting(StreamInfo::nextOffset).containsExactly(2L);
    assertThat(b.operations().streams()).extracting(StreamInfo::nextOffset).containsExactly(3L);
    assertThat(a.wakeChannel()).isNotEqualTo(b.wakeChannel());
    assertThat(db.queryLong("SELECT count(*) FROM es_a.eventstream_flyway_history")).isPositive();
    assertThat(db.queryLong("SELECT count(*) FROM es_b.eventstream_flyway_history")).isPositive();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name ="
                    + " 'eventstream'"))
        .isZero();
  }

  @Test
  void aDmlOnlyRoleRunsTheStoreThePumpAndEveryCheckpointOperation(TestDatabase db) {
    String role = "es_dml_role_eventschemasit";
    EventOperations.of(db.dataSource(), "es_dml").migrate();
    db.createLoginRole(role, "secret-dml");
    for (String grant : EventOperations.of(db.dataSource(), "es_dml").grantStatements(role)) {
      db.execute(grant);
    }
    DataSource ds = db.newDataSource("dml", 8, role, "secret-dml");
    EventStore store = EventStore.builder(ds, CODEC).schema("es_dml").build();
    // The role holds no more than DML: it cannot change the schema.
    assertThatThrownBy(() -> inTx(ds, tx -> tx.dsl().execute("DROP TABLE es_dml.events")))
        .hasMessageContaining("must be owner");

    long stream = inTx(ds, tx -> store.createStream(tx));
    inTx(
        ds,
        tx ->
            store.appendTo(
                tx,
                stream,
                0,
                List.of(new OrderPlaced("d1", 1), new OrderPlaced("poison-d", 2)),
                new EventMetadata("c", "d", Map.of("h", "v"))));
    inTx(ds, tx -> store.append(tx, List.of(new OrderPlaced("d3", 3))));
    List<String> seen = new CopyOnWriteArrayList<>();
    AtomicBoolean healed = new AtomicBoolean();
    EventOperations h = store.operations();
    try (MessagePump p = pump(ds, driver(store, seen, healed), "dml").build();
        MessagePump minimal =
            pump(
                    ds,
                    store.driver(
                        "serial",
                        EventHandlers.builder().on(OrderPlaced.class, (e, ctx) -> {}).build(),
                        EventDriverOptions.defaults().withConcurrency(Concurrency.MINIMAL)),
                    "serial")
                .build()) {
      p.start();
      minimal.start();
      await().atMost(WAIT).until(() -> h.parked("proj").size() == 1);
      assertThat(h.parked().get(0).parkedReason()).contains("poisoned poison-d");
      healed.set(true);
      assertThat(h.resume("proj", stream)).isTrue();
      await().atMost(WAIT).until(() -> h.lag("proj") == 0 && h.lag("serial") == 0);
      // The cluster-wide pause of a handler (paused_handlers) is DML of the role too.
      assertThat(store.operations().pauseHandler("serial", "maintenance")).isTrue();
      assertThat(store.operations().pausedHandlers()).extracting(Pause::name).contains("serial");
      assertThat(store.operations().resumeHandler("serial")).isTrue();
      h.setCheckpoint("proj", stream, 3, 0);
      await().atMost(WAIT).until(() -> h.lag("proj") == 0 && seen.size() == 6);
      assertThat(h.reset("proj")).isEqualTo(1);
      await().atMost(WAIT).until(() -> seen.size() == 9);
    }
    assertThat(h.handlerKeys()).containsExactly("proj", "serial");
    assertThat(h.checkpoints("proj")).extracting(Checkpoint::lag).containsExactly(0L);
    assertThat(store.operations().read(stream, 0, 10)).hasSize(3);
    assertThat(queryLong(ds, "SELECT count(*) FROM es_dml.events")).isEqualTo(3);
  }
}
