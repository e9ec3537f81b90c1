package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** {@link MessageBalancer#storeMessages}: one multi-row insert, in order, checked first. */
@ExtendWith(PostgresExtension.class)
class BatchStoreIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * 2,500 messages (three inserts of up to 1,000) over an existing key and new ones, in the
   * caller's transaction: ids in input order, new keys at the back in order of appearance, every
   * key's messages delivered in list order, properties kept.
   */
  @Test
  void storesInInputOrderInTheCallersTransaction(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "batch");
    long before = b.storeMessage("old", bytes("-1"));
    List<NewMessage> batch = new ArrayList<>();
    for (int i = 0; i < 2_500; i++) {
      String key = i == 0 ? "new-z" : i % 5 == 0 ? "old" : "new-" + (i % 5);
      batch.add(
          i % 2 == 0
              ? NewMessage.of(key, bytes(Integer.toString(i)), Map.of("i", i))
              : NewMessage.of(key, bytes(Integer.toString(i))));
    }
    long[] ids;
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      ids = b.storeMessages(c, batch);
      assertThat(b.operations().messageCount(b.group()))
          .isEqualTo(1); // not visible before the caller commits
      c.commit();
    }
    assertThat(ids).hasSize(2_500);
    assertThat(ids[0]).isGreaterThan(before);
    for (int i = 1; i < ids.length; i++) {
      assertThat(ids[i]).isGreaterThan(ids[i - 1]);
    }
    assertThat(b.operations().partitionKeys(b.group()))
        .containsExactly("old", "new-z", "new-1", "new-2", "new-3", "new-4");
    Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
    Map<Long, Object> props = new ConcurrentHashMap<>();
    PumpTester tester =
        PumpTester.builder(
                ds,
                b.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              seen.computeIfAbsent(
                                      m.partitionKey(), k -> new CopyOnWriteArrayList<>())
                                  .add(
                                      Integer.parseInt(
                                          new String(m.content(), StandardCharsets.UTF_8)));
                              props.put(m.id(), m.properties().getOrDefault("i", "none"));
                              return Result.ok();
                            })
                        .build()))
            .batchSize(10)
            .build();
    tester.drainUntilIdle();
    assertThat(b.operations().messageCount(b.group())).isZero();
    seen.forEach((key, list) -> assertThat(list).as(key).isSorted());
    assertThat(seen.get("old")).startsWith(-1, 5, 10);
    assertThat(props.get(ids[4])).isEqualTo(4);
    assertThat(props.get(ids[3])).isEqualTo("none");
  }

  /**
   * Every element is checked before anything is sent: the bad one is named by its index, nothing is
   * stored, and the caller's transaction goes on.
   */
  @Test
  void aBadElementIsRefusedBeforeAnythingIsSent(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.builder(ds, "batch-bad").maxContentBytes(10).build();
    List<NewMessage> tooLarge =
        List.of(NewMessage.of("k", bytes("a")), NewMessage.of("k", new byte[11]));
    List<NewMessage> badJson = List.of(new NewMessage("k", bytes("a"), "[1]"));
    List<NewMessage> nullKey =
        List.of(NewMessage.of("k", bytes("a")), NewMessage.of(null, bytes("a")));
    List<NewMessage> blank = List.of(NewMessage.of(" ", bytes("a")));
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      b.storeMessages(c, List.of(NewMessage.of("kept", bytes("1"))));
      assertThatThrownBy(() -> b.storeMessages(c, tooLarge))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("messages[1]")
          .hasMessageContaining("maxContentBytes");
      assertThatThrownBy(() -> b.storeMessages(c, badJson))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("messages[0]")
          .hasMessageContaining("properties");
      assertThatThrownBy(() -> b.storeMessages(c, nullKey))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("messages[1]");
      assertThatThrownBy(() -> b.storeMessages(c, blank))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("messages[0]");
      List<NewMessage> withNull = new ArrayList<>();
      withNull.add(null);
      assertThatThrownBy(() -> b.storeMessages(c, withNull))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("messages[0]");
      assertThat(b.storeMessages(c, List.of())).isEmpty();
      // The transaction survived: it can still write and commit.
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 1")) {
        assertThat(rs.next()).isTrue();
      }
      c.commit();
    }
    assertThat(b.operations().messageCount(b.group())).isEqualTo(1);
    assertThat(b.operations().partitionKeys(b.group())).containsExactly("kept");
  }

  /**
   * Batches over few keys race consumers that empty and delete the keys' rows: nothing is stranded
   * and every message is handled once, in its key's order.
   */
  @Test
  void batchesRacingConsumersStrandNothing(TestDatabase db) throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "batch-race");
    Set<Long> handled = ConcurrentHashMap.newKeySet();
    Map<String, List<Integer>> order = new ConcurrentHashMap<>();
    DataSource consumerPool = db.newDataSource("batch-race-consumer", 6);
    int producers = 3;
    int batches = 20;
    try (MessagePump pump =
        Pumps.pump(
            consumerPool,
            "batch-race",
            MessageBalancer.create(consumerPool, "batch-race")
                .driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              handled.add(m.id());
                              order
                                  .computeIfAbsent(
                                      m.partitionKey(), k -> new CopyOnWriteArrayList<>())
                                  .add(
                                      Integer.parseInt(
                                          new String(m.content(), StandardCharsets.UTF_8)));
                              return Result.ok();
                            })
                        .build()),
            4)) {
      pump.start();
      List<CompletableFuture<Void>> running = new ArrayList<>();
      for (int p = 0; p < producers; p++) {
        int producer = p;
        running.add(
            CompletableFuture.runAsync(
                () -> {
                  for (int i = 0; i < batches; i++) {
                    List<NewMessage> batch = new ArrayList<>();
                    // Two keys every producer writes, listed in opposite orders: the batch locks
                    // its keys in one fixed order, so producers do not deadlock.
                    batch.add(NewMessage.of(producer % 2 == 0 ? "s0" : "s1", bytes("-1")));
                    batch.add(NewMessage.of(producer % 2 == 0 ? "s1" : "s0", bytes("-1")));
                    for (int j = 0; j < 5; j++) {
                      // Keys of this producer: the value orders its messages.
                      batch.add(
                          NewMessage.of(
                              "p" + producer + "-k" + ((i + j) % 3),
                              bytes(Integer.toString(i * 5 + j))));
                    }
                    b.storeMessages(batch);
                  }
                }));
      }
      CompletableFuture.allOf(running.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
      await().atMost(WAIT).until(() -> handled.size() == producers * batches * 7);
    }
    order.forEach((key, list) -> assertThat(list).as(key).isSorted());
    assertThat(order.get("s0")).hasSize(producers * batches);
    assertThat(b.operations().messageCount(b.group())).isZero();
    await().atMost(WAIT).until(() -> b.operations().partitionCount(b.group()) == 0);
  }
}
