package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.Tx;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Savepoints are set lazily, at a delivery's first statement, and {@link Driver#completed} runs
 * once per batch: a batch mixing handled deliveries, failures after a write and failures before any
 * statement keeps exactly the handled deliveries' writes.
 */
@ExtendWith(PostgresExtension.class)
class BatchSavepointsIT {

  private final List<MessagePump> pumps = new ArrayList<>();
  private TestDatabase db;

  @BeforeEach
  void schema(TestDatabase db) {
    this.db = db;
    db.execute("DROP TABLE IF EXISTS work, work_parked, effects");
    db.execute(TinyTable.SCHEMA);
    db.execute("CREATE TABLE effects (work_id bigint NOT NULL, what text NOT NULL)");
    db.execute("INSERT INTO work (body) SELECT 'job ' || g FROM generate_series(1, 30) g");
  }

  @AfterEach
  void close() {
    pumps.forEach(MessagePump::close);
  }

  private MessagePump pump(Driver driver) {
    MessagePump p =
        MessagePump.builder(db.dataSource())
            .name("savepoints")
            .driver(driver)
            .workers(1)
            .batchSize(30)
            .pollInterval(Duration.ofMillis(50))
            // Failed deliveries come back only after the test has looked.
            .backoff(Duration.ofMinutes(10), Duration.ofMinutes(10))
            .build();
    pumps.add(p);
    return p;
  }

  /** id % 3 == 0: handled after a write; 1: fails after a write; 2: fails before any statement. */
  private static Outcome mixed(Tx tx, long id) {
    if (id % 3 == 2) {
      throw new IllegalStateException("fails before touching the database");
    }
    tx.dsl().execute("INSERT INTO effects (work_id, what) VALUES (?, 'write')", id);
    if (id % 3 == 1) {
      throw new IllegalStateException("fails after a write");
    }
    return Outcome.HANDLED;
  }

  @Test
  void aBatchKeepsOnlyTheHandledDeliveriesWrites() {
    pump(new TinyTableDriver((tx, id, body) -> mixed(tx, id))).start();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> db.queryLong("SELECT count(*) FROM work WHERE failures = 1") == 20);
    assertThat(db.queryLong("SELECT count(*) FROM effects")).isEqualTo(10);
    assertThat(db.queryLong("SELECT count(*) FROM effects WHERE work_id % 3 <> 0")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM work")).isEqualTo(20);
    assertThat(db.queryLong("SELECT count(*) FROM work WHERE id % 3 = 0")).isZero();
  }

  @Test
  void completedRunsOncePerBatchWithTheHandledDeliveriesInOrder() {
    List<List<String>> batches = new CopyOnWriteArrayList<>();
    Driver driver =
        new ForwardingDriver(new TinyTableDriver((tx, id, body) -> mixed(tx, id))) {
          @Override
          public void completed(Tx tx, List<Delivery> handled) throws SQLException {
            batches.add(handled.stream().map(Delivery::messageId).toList());
            tx.dsl().execute("INSERT INTO effects (work_id, what) VALUES (0, 'completed')");
          }
        };
    pump(driver).start();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> db.queryLong("SELECT count(*) FROM work WHERE failures = 1") == 20);
    assertThat(batches).hasSize(1);
    assertThat(batches.get(0))
        .containsExactly("3", "6", "9", "12", "15", "18", "21", "24", "27", "30");
    assertThat(db.queryLong("SELECT count(*) FROM effects WHERE what = 'completed'")).isOne();
  }

  @Test
  void aFailingCompletionReturnsTheWholeBatch() {
    AtomicBoolean failed = new AtomicBoolean();
    Driver driver =
        new ForwardingDriver(
            new TinyTableDriver(
                (tx, id, body) -> {
                  tx.dsl().execute("INSERT INTO effects (work_id, what) VALUES (?, 'write')", id);
                  return Outcome.HANDLED;
                })) {
          @Override
          public void completed(Tx tx, List<Delivery> handled) throws SQLException {
            failed.set(true);
            throw new SQLException("bookkeeping refused", "23514");
          }
        };
    MessagePump p = pump(driver);
    p.start();
    await().atMost(Duration.ofSeconds(30)).untilTrue(failed);
    p.close();
    assertThat(db.queryLong("SELECT count(*) FROM effects")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM work WHERE failures = 0")).isEqualTo(30);
  }
}
