package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.spi.Driver;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Races 1, 2, 4 and 6 of docs/balancer.md (Design). */
@ExtendWith(PostgresExtension.class)
class BalancerRacesIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static long orphans(TestDatabase db) {
    return db.queryLong(
        "SELECT count(*) FROM balancer.messages m WHERE NOT EXISTS (SELECT 1 FROM"
            + " balancer.partitions p WHERE p.partition_group = m.partition_group"
            + " AND p.partition_key = m.partition_key)");
  }

  /** Race 1: two processes (separate pools) never hold the same key at once. */
  @Test
  void twoProcessesNeverHoldTheSameKey(TestDatabase db) throws Exception {
    MessageBalancer producer = MessageBalancer.create(db.dataSource(), "race1");
    int keys = 20;
    int perKey = 15;
    for (int i = 0; i < perKey; i++) {
      for (int k = 0; k < keys; k++) {
        producer.storeMessage("k" + k, bytes(Integer.toString(i)));
      }
    }
    Map<String, Boolean> holding = new ConcurrentHashMap<>();
    Set<Long> handled = ConcurrentHashMap.newKeySet();
    AtomicInteger overlaps = new AtomicInteger();
    AtomicInteger duplicates = new AtomicInteger();
    BalancedHandler handler =
        (m, ctx) -> {
          if (holding.putIfAbsent(m.partitionKey(), Boolean.TRUE) != null) {
            overlaps.incrementAndGet();
          }
          try {
            Thread.sleep(2); // simulated work, so that holds overlap in time
          } finally {
            holding.remove(m.partitionKey());
          }
          if (!handled.add(m.id())) {
            duplicates.incrementAndGet();
          }
          return Result.ok();
        };
    DataSource a = db.newDataSource("race1-a", 6);
    DataSource b = db.newDataSource("race1-b", 6);
    try (MessagePump pa =
            Pumps.pump(
                a,
                "race1-a",
                MessageBalancer.create(a, "race1")
                    .driver(BalancedHandlers.builder().on(handler).build()),
                4);
        MessagePump pb =
            Pumps.pump(
                b,
                "race1-b",
                MessageBalancer.create(b, "race1")
                    .driver(BalancedHandlers.builder().on(handler).build()),
                4)) {
      pa.start();
      pb.start();
      await().atMost(WAIT).until(() -> handled.size() == keys * perKey);
    }
    assertThat(duplicates).hasValue(0);
    assertThat(overlaps).hasValue(0);
    assertThat(producer.operations().messageCount(producer.group())).isZero();
    assertThat(producer.operations().partitionCount(producer.group())).isZero();
  }

  /**
   * Race 2a: a producer is storing (uncommitted) into a key whose last message is Ok'd: the
   * consumer does not wait for it and does not delete the key row; the new message is delivered.
   */
  @Test
  void lastOkWhileAProducerIsStoringStrandsNothing(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "race2a");
    b.storeMessage("k", bytes("first"));
    PumpTester driver =
        Pumps.tester(ds, b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build()));
    long late;
    try (Connection producer = ds.getConnection()) {
      producer.setAutoCommit(false);
      late = b.storeMessage(producer, "k", bytes("late"), null);
      // The consumer handles the last committed message and commits without waiting.
      CompletableFuture<Long> consumer = CompletableFuture.supplyAsync(() -> Pumps.step(driver));
      assertThat(consumer.get(30, TimeUnit.SECONDS)).isPositive();
      producer.commit();
    }
    assertThat(orphans(db)).isZero();
    assertThat(Pumps.step(driver)).isEqualTo(late);
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }

  /**
   * Race 2b: the consumer has deleted the emptied key row (uncommitted) when a producer stores: the
   * producer waits, then creates a new key row; its message is delivered.
   */
  @Test
  void producerAfterTheKeyRowWasDeletedCreatesItAgain(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "race2b");
    b.storeMessage("k", bytes("first"));
    AtomicReference<CompletableFuture<Long>> producer = new AtomicReference<>();
    // The pump's transaction is held open after the driver's completion bookkeeping (Ok: message
    // and key row deleted), before its commit.
    Driver driver =
        Pumps.afterCompleted(
            b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build()),
            () -> {
              if (producer.get() != null) {
                return;
              }
              assertThat(
                      db.queryLong(
                          "SELECT count(*) FROM balancer.partitions"
                              + " WHERE partition_group = 'race2b'"))
                  .isEqualTo(1); // the delete is not visible yet
              producer.set(
                  CompletableFuture.supplyAsync(() -> b.storeMessage("k", bytes("second"))));
              await()
                  .atMost(WAIT)
                  .until(
                      () ->
                          db.queryLong(
                                  "SELECT count(*) FROM pg_stat_activity WHERE datname ="
                                      + " current_database() AND wait_event_type = 'Lock'")
                              >= 1);
              assertThat(producer.get()).isNotDone();
            });
    PumpTester consumer = Pumps.tester(ds, driver);
    assertThat(Pumps.step(consumer)).isPositive(); // commits after the hook
    long second = producer.get().get(30, TimeUnit.SECONDS);
    assertThat(orphans(db)).isZero();
    assertThat(b.operations().partitionKeys(b.group())).containsExactly("k");
    assertThat(Pumps.step(consumer)).isEqualTo(second);
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }

  /** Race 2c: producers and consumers on few keys at full speed: nothing stranded. */
  @Test
  void producersAndConsumersOnFewKeysStrandNothing(TestDatabase db) throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "race2c");
    Set<Long> handled = ConcurrentHashMap.newKeySet();
    DataSource consumerPool = db.newDataSource("race2c-consumer", 6);
    int perProducer = 150;
    List<Long> stored = java.util.Collections.synchronizedList(new ArrayList<>());
    try (MessagePump pump =
        Pumps.pump(
            consumerPool,
            "race2c",
            MessageBalancer.create(consumerPool, "race2c")
                .driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              handled.add(m.id());
                              return Result.ok();
                            })
                        .build()),
            4)) {
      pump.start();
      List<CompletableFuture<Void>> producers = new ArrayList<>();
      for (int p = 0; p < 3; p++) {
        producers.add(
            CompletableFuture.runAsync(
                () -> {
                  for (int i = 0; i < perProducer; i++) {
                    stored.add(
                        b.storeMessage(
                            "k" + ThreadLocalRandom.current().nextInt(3), bytes("x" + i)));
                  }
                }));
      }
      CompletableFuture.allOf(producers.toArray(CompletableFuture[]::new))
          .get(120, TimeUnit.SECONDS);
      await().atMost(WAIT).until(() -> handled.size() == 3 * perProducer);
    }
    assertThat(handled).containsExactlyInAnyOrderElementsOf(stored);
    assertThat(orphans(db)).isZero();
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }

  /**
   * Race 4: ids of one key commit in order. A producer that has stored (uncommitted) makes the next
   * producer of the same key wait, so a later id can never be delivered before an earlier one.
   */
  @Test
  void idsOfOneKeyCommitInOrder(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "race4");
    PumpTester driver =
        Pumps.tester(ds, b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build()));
    CompletableFuture<Long> second;
    long first;
    try (Connection slow = ds.getConnection()) {
      slow.setAutoCommit(false);
      first = b.storeMessage(slow, "k", bytes("first"), null);
      second = CompletableFuture.supplyAsync(() -> b.storeMessage("k", bytes("second")));
      await()
          .atMost(WAIT)
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT"
                              + " granted")
                      == 1);
      // Another key is not held up.
      long other = b.storeMessage("other", bytes("x"));
      assertThat(other).isPositive();
      assertThat(second).isNotDone();
      // Nothing of "k" is visible to consumers yet.
      assertThat(Pumps.step(driver)).isEqualTo(other);
      assertThat(Pumps.step(driver)).isEqualTo(-1);
      slow.commit();
    }
    long secondId = second.get(30, TimeUnit.SECONDS);
    assertThat(secondId).isGreaterThan(first);
    assertThat(Pumps.step(driver)).isEqualTo(first);
    assertThat(Pumps.step(driver)).isEqualTo(secondId);
  }

  /** Race 6a: the reaper wins; a confirm arriving at the same moment waits and is rejected. */
  @Test
  void reaperFirstThenConfirmIsRejected(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "race6a");
    long id = b.storeMessage("k", bytes("x"));
    AtomicInteger deliveries = new AtomicInteger();
    List<UUID> tokens = new java.util.concurrent.CopyOnWriteArrayList<>();
    AtomicReference<CompletableFuture<LeaseResult>> confirm = new AtomicReference<>();
    BalancerDriver handoffOnce =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      deliveries.incrementAndGet();
                      tokens.add(m.handoffToken());
                      if (tokens.size() == 1) {
                        return Result.handoff(Duration.ofMillis(1));
                      }
                      // The reaper freed the key in this transaction (not committed) and
                      // acquisition
                      // took the message again: a confirm of the first lease waits for it.
                      confirm.set(
                          CompletableFuture.supplyAsync(
                              () -> b.operations().confirm(id, tokens.get(0))));
                      await()
                          .atMost(WAIT)
                          .until(
                              () ->
                                  db.queryLong(
                                          "SELECT count(*) FROM pg_stat_activity WHERE datname ="
                                              + " current_database() AND wait_event_type = 'Lock'")
                                      >= 1);
                      return Result.requeue();
                    })
                .build(),
            BalancerDriverOptions.defaults().withReapInterval(Duration.ofMillis(1)));
    PumpTester reaper = Pumps.tester(ds, handoffOnce);
    assertThat(Pumps.step(reaper)).isEqualTo(id); // handed off; the lease expires at once
    await()
        .atMost(WAIT)
        .until(
            () ->
                db.queryLong(
                        "SELECT count(*) FROM balancer.partitions"
                            + " WHERE partition_group = 'race6a' AND lease_until < clock_timestamp()")
                    == 1);
    assertThat(Pumps.step(reaper)).isEqualTo(id); // reaped and taken again
    assertThat(confirm.get().get(30, TimeUnit.SECONDS)).isEqualTo(LeaseResult.STALE_TOKEN);
    assertThat(deliveries).hasValue(2);
    assertThat(b.operations().messageCount(b.group())).isEqualTo(1);
    assertThat(db.queryLong("SELECT attempts FROM balancer.messages WHERE id = " + id))
        .isEqualTo(1);
  }

  /** Race 6b: the confirm wins; the reaper skips the row and the message is never redelivered. */
  @Test
  void confirmFirstThenReaperSkips(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "race6b");
    long id = b.storeMessage("k", bytes("x"));
    AtomicInteger deliveries = new AtomicInteger();
    List<UUID> tokens = new java.util.concurrent.CopyOnWriteArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      deliveries.incrementAndGet();
                      tokens.add(m.handoffToken());
                      return Result.handoff(Duration.ofMillis(1));
                    })
                .build(),
            BalancerDriverOptions.defaults().withReapInterval(Duration.ofMillis(1)));
    PumpTester reaper = Pumps.tester(ds, driver);
    assertThat(Pumps.step(reaper)).isEqualTo(id);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertThat(b.operations().confirm(c, id, tokens.get(0))).isEqualTo(LeaseResult.APPLIED);
      // The lease has expired by now, but the confirm holds the row: the reaper skips it.
      assertThat(reaper.runOnce()).isEmpty();
      c.commit();
    }
    assertThat(Pumps.step(reaper)).isEqualTo(-1);
    assertThat(deliveries).hasValue(1);
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }

  /**
   * Race 6c: many leases expire while confirms arrive and two processes reap: a message whose
   * confirm was applied is never delivered again; one whose confirm was rejected is.
   */
  @Test
  void reapersAndConfirmsAtFullSpeed(TestDatabase db) throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "race6c");
    int n = 40;
    for (int i = 0; i < n; i++) {
      b.storeMessage("k" + i, bytes("x"));
    }
    Map<Long, UUID> firstToken = new ConcurrentHashMap<>();
    Map<Long, AtomicInteger> deliveries = new ConcurrentHashMap<>();
    BalancedHandler handler =
        (m, ctx) -> {
          int d = deliveries.computeIfAbsent(m.id(), x -> new AtomicInteger()).incrementAndGet();
          if (d == 1) {
            firstToken.put(m.id(), m.handoffToken());
            return Result.handoff(Duration.ofMillis(300));
          }
          return Result.ok();
        };
    DataSource a = db.newDataSource("race6c-a", 6);
    DataSource c = db.newDataSource("race6c-b", 6);
    Map<Long, LeaseResult> confirms = new ConcurrentHashMap<>();
    try (MessagePump pa =
            Pumps.pump(
                a,
                "race6c-a",
                MessageBalancer.create(a, "race6c")
                    .driver(
                        BalancedHandlers.builder().on(handler).build(),
                        BalancerDriverOptions.defaults().withReapInterval(Duration.ofMillis(5))),
                3);
        MessagePump pb =
            Pumps.pump(
                c,
                "race6c-b",
                MessageBalancer.create(c, "race6c")
                    .driver(
                        BalancedHandlers.builder().on(handler).build(),
                        BalancerDriverOptions.defaults().withReapInterval(Duration.ofMillis(5))),
                3)) {
      pa.start();
      pb.start();
      await().atMost(WAIT).until(() -> firstToken.size() == n);
      // Confirm each one around its expiry, racing the reapers.
      List<Long> ids = new ArrayList<>(firstToken.keySet());
      ids.parallelStream()
          .forEach(
              id -> {
                try {
                  Thread.sleep(ThreadLocalRandom.current().nextInt(200, 400)); // spread arrival
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                confirms.put(id, b.operations().confirm(id, firstToken.get(id)));
              });
      await().atMost(WAIT).until(() -> b.operations().messageCount(b.group()) == 0);
    }
    for (Map.Entry<Long, LeaseResult> e : confirms.entrySet()) {
      int delivered = deliveries.get(e.getKey()).get();
      if (e.getValue() == LeaseResult.APPLIED) {
        assertThat(delivered).as("confirmed message %s", e.getKey()).isEqualTo(1);
      } else {
        // Rejected: the lease was reaped and the message taken again (and maybe removed already).
        assertThat(e.getValue()).isIn(LeaseResult.STALE_TOKEN, LeaseResult.UNKNOWN_MESSAGE);
        assertThat(delivered).as("rejected message %s", e.getKey()).isEqualTo(2);
      }
    }
    assertThat(confirms).hasSize(n);
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }
}
