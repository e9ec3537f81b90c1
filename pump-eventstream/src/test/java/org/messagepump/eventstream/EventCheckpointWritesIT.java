package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * A delivery's checkpoint update adds no index entry while its stream still has a backlog (V4
 * migration): the row keeps its turn and the ready index reads the generated {@code pending}
 * column, so PostgreSQL can make the update HOT. Before, every update took a new turn and moved a
 * column of the index predicate: no update was HOT, and the pending index grew by a dead entry per
 * delivery, which every claim walked until a vacuum (docs/performance-notes.md).
 */
@ExtendWith(PostgresExtension.class)
class EventCheckpointWritesIT {

  private static final int STREAMS = 2;
  private static final int EVENTS = 300;

  @Test
  void checkpointUpdatesWithinABacklogAreHot(TestDatabase db) {
    DataSource ds = db.dataSource();
    EventOperations.of(ds).migrate();
    EventStore store = EventStore.create(ds, CODEC);
    for (int s = 0; s < STREAMS; s++) {
      int stream = s;
      inTx(
          ds,
          tx -> {
            List<Object> events = new ArrayList<>();
            for (int i = 0; i < EVENTS; i++) {
              events.add(new OrderPlaced("s" + stream + "-" + i, i));
            }
            return store.appendTo(tx, store.createStream(tx), events);
          });
    }
    AtomicInteger seen = new AtomicInteger();
    // The pump gets a pool of its own, closed when it is done: a backend reports its table
    // statistics at exit at the latest (PostgreSQL 14, the embedded default, holds them while
    // idle).
    HikariDataSource pumpPool = db.newDataSource("hot-pump", 4);
    EventDriver driver =
        store.driver(
            "hot",
            EventHandlers.builder()
                .on(OrderPlaced.class, (e, ctx) -> seen.incrementAndGet())
                .build());
    try (MessagePump pump =
        MessagePump.builder(pumpPool)
            .name("hot")
            .driver(driver)
            .workers(2)
            .batchSize(1)
            .pollInterval(Duration.ofMillis(20))
            .build()) {
      pump.start();
      await().atMost(Duration.ofMinutes(1)).until(() -> seen.get() >= STREAMS * EVENTS);
    }
    pumpPool.close();
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> updates(db, "n_tup_upd") >= STREAMS * EVENTS);
    long updated = updates(db, "n_tup_upd");
    long hot = updates(db, "n_tup_hot_upd");
    // Not all: an update finds no room on the page when a concurrent snapshot keeps the page's
    // older versions from being pruned, and the last update of each stream changes "pending".
    assertThat(hot).as("HOT updates of %s checkpoint updates", updated).isGreaterThan(updated / 2);
  }

  private static long updates(TestDatabase db, String column) {
    db.execute("SELECT pg_stat_clear_snapshot()");
    return db.queryLong(
        "SELECT "
            + column
            + " FROM pg_stat_user_tables"
            + " WHERE schemaname = 'eventstream' AND relname = 'handler_checkpoints'");
  }
}
