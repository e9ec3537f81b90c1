package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * A stored row whose columns cannot be handed to a handler (written around the API) never makes
 * acquisition fail: it becomes a delivery that fails as undecodable and its key is parked at
 * maxFailures, while every good message of the same batches is handled exactly once.
 */
@ExtendWith(PostgresExtension.class)
class UnreadableRowsIT {

  private static final int MAX_FAILURES = 3;

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  @Test
  void badRowsAreParkedAndGoodOnesHandledOnce(TestDatabase db) {
    run(db, "unreadable-locked", true);
  }

  @Test
  void badRowsAreParkedWithoutLockPartition(TestDatabase db) {
    run(db, "unreadable-free", false);
  }

  private static void run(TestDatabase db, String group, boolean lockPartition) {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, group);
    for (int i = 0; i < 12; i++) {
      b.storeMessage("good-" + (i % 6), ("m" + i).getBytes(StandardCharsets.UTF_8));
    }
    long hugeNumber = b.storeMessage("bad-number", new byte[] {1});
    long noTime = b.storeMessage("bad-time", new byte[] {2});
    long notObject = b.storeMessage("bad-shape", new byte[] {3});
    // Valid jsonb that Jackson refuses (a number of 2,001 digits); a received_at no Instant range
    // check accepts; and properties that are not an object (the CHECK dropped by someone).
    db.execute(
        "UPDATE balancer.messages SET properties = ('{\"n\": 1' || repeat('0', 2000) || '}')::jsonb"
            + " WHERE id = "
            + hugeNumber);
    db.execute("UPDATE balancer.messages SET received_at = '-infinity' WHERE id = " + noTime);
    db.execute(
        "ALTER TABLE balancer.messages DROP CONSTRAINT IF EXISTS messages_properties_object");
    db.execute("UPDATE balancer.messages SET properties = '[1]' WHERE id = " + notObject);

    // Each delivery of a bad row deletes it and writes it back (acquisition deletes the heads it
    // delivers): the rows must stay exactly as stored, whatever their columns hold.
    String asStored =
        "SELECT string_agg(id || '/' || encode(content, 'hex') || '/' || properties::text || '/'"
            + " || received_at::text || '/' || attempts, ',' ORDER BY id) FROM balancer.messages"
            + " WHERE partition_key LIKE 'bad-%' AND partition_group = '"
            + group
            + "'";
    String before = db.queryString(asStored);
    Map<Long, AtomicInteger> handled = new ConcurrentHashMap<>();
    AtomicInteger badSeen = new AtomicInteger();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      if (m.partitionKey().startsWith("bad")) {
                        badSeen.incrementAndGet();
                      }
                      m.properties(); // readable for every message the handler gets
                      handled.computeIfAbsent(m.id(), id -> new AtomicInteger()).incrementAndGet();
                      return Result.ok();
                    })
                .build(),
            BalancerDriverOptions.defaults().withLockPartition(lockPartition));
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name(group)
            .driver(driver)
            .workers(1)
            .batchSize(10)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(10), Duration.ofMillis(50))
            .maxFailures(MAX_FAILURES)
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> handled.size() == 12 && b.operations().parkedKeys(b.group()).size() == 3);
    }
    assertThat(handled.values()).allMatch(n -> n.get() == 1);
    assertThat(badSeen).hasValue(0);
    Map<String, String> parked = b.operations().parkedKeys(b.group());
    assertThat(parked).containsOnlyKeys("bad-number", "bad-time", "bad-shape");
    for (String key : parked.keySet()) {
      assertThat(b.operations().partitionStats(b.group(), key).orElseThrow().failures())
          .isEqualTo(MAX_FAILURES);
    }
    assertThat(parked.get("bad-number"))
        .contains("cannot be read", "properties")
        .doesNotContain("00000000");
    assertThat(parked.get("bad-time")).contains("cannot be read", "received_at");
    assertThat(parked.get("bad-shape")).contains("cannot be read", "not a JSON object");
    assertThat(b.operations().messageCount(b.group())).isEqualTo(3);
    assertThat(db.queryString(asStored)).as("the bad rows as stored").isEqualTo(before);
    db.execute("DELETE FROM balancer.messages WHERE partition_group = '" + group + "'");
    db.execute("DELETE FROM balancer.partitions WHERE partition_group = '" + group + "'");
  }
}
