package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Handler timeouts with a driver written against the SPI alone (postpone and park, nothing else):
 * two pumps with their own pools and batches of four. A handler that swallows its interrupt and
 * returns normally late is counted as failed in its own transaction, never runs twice at once, and
 * runs {@code maxFailures} times; the other deliveries of its batches commit.
 */
@ExtendWith(PostgresExtension.class)
class HandlerTimeoutBatchIT {

  static final int MAX_FAILURES = 2;

  private TestDatabase db;

  @BeforeEach
  void schema(TestDatabase db) {
    this.db = db;
    db.execute("DROP TABLE IF EXISTS work, work_parked, effects");
    db.execute(TinyTable.SCHEMA);
    db.execute("CREATE TABLE effects (work_id bigint NOT NULL)");
  }

  @Test
  void aTimedOutDeliveryFailsAloneAndNeverRunsTwiceAtOnce() {
    int stuck = 10;
    int quick = 40;
    db.execute(
        "INSERT INTO work (body) SELECT CASE WHEN g % 5 = 0 THEN 'stuck' ELSE 'quick' END"
            + " FROM generate_series(1, "
            + (stuck + quick)
            + ") g");
    Map<Long, AtomicInteger> running = new ConcurrentHashMap<>();
    Map<Long, AtomicInteger> runs = new ConcurrentHashMap<>();
    AtomicInteger overlaps = new AtomicInteger();
    TinyTableDriver driver =
        new TinyTableDriver(
            (tx, id, body) -> {
              if (body.equals("quick")) {
                tx.dsl().execute("INSERT INTO effects (work_id) VALUES (?)", id);
                return Outcome.HANDLED;
              }
              // Counted on entry: the timeout may cut the statement below short.
              runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
              if (running.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet() > 1) {
                overlaps.incrementAndGet();
              }
              try {
                tx.dsl().execute("INSERT INTO effects (work_id) VALUES (?)", id);
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(600);
                for (long left; (left = until - System.nanoTime()) > 0; ) {
                  try {
                    TimeUnit.NANOSECONDS.sleep(left);
                  } catch (InterruptedException swallowed) {
                    // ignores its timeout
                  }
                }
                return Outcome.HANDLED; // late, and handled in its own eyes
              } finally {
                running.get(id).decrementAndGet();
              }
            });
    List<MessagePump> pumps = new ArrayList<>();
    try {
      for (String name : List.of("spi-a", "spi-b")) {
        MessagePump pump =
            MessagePump.builder(db.newDataSource(name, 4))
                .name(name)
                .driver(driver)
                .workers(2)
                .batchSize(4)
                .pollInterval(Duration.ofMillis(20))
                .backoff(Duration.ofMillis(10), Duration.ofMillis(20))
                .maxFailures(MAX_FAILURES)
                .handlerTimeout(Duration.ofMillis(300))
                .build();
        pumps.add(pump);
        pump.start();
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> db.queryLong("SELECT count(*) FROM work") == 0);
    } finally {
      pumps.forEach(MessagePump::close);
    }
    assertThat(overlaps).hasValue(0);
    assertThat(runs).hasSize(stuck);
    assertThat(runs.values()).allSatisfy(r -> assertThat(r).hasValue(MAX_FAILURES));
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM work_parked WHERE failures = "
                    + MAX_FAILURES
                    + " AND reason LIKE 'HandlerTimeoutException%'"))
        .isEqualTo(stuck);
    // Each quick delivery committed once, in batches beside timed-out ones; nothing of a timed-out
    // run committed.
    assertThat(db.queryLong("SELECT count(*) FROM effects")).isEqualTo(quick);
    assertThat(db.queryLong("SELECT count(DISTINCT work_id) FROM effects")).isEqualTo(quick);
  }
}
