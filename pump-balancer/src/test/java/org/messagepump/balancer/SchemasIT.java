package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Two instances in two schemas of one database, with the same group and keys, never see each
 * other's messages, parked keys or figures; each schema has its own Flyway history and channel.
 */
@ExtendWith(PostgresExtension.class)
class SchemasIT {

  @BeforeAll
  static void migrate(DataSource ds) {
    BalancerOperations.of(ds, "tenant_a").migrate();
    BalancerOperations.of(ds, "tenant_b").migrate();
    BalancerOperations.of(ds, "tenant_a").migrate(); // idempotent, per schema
  }

  @Test
  void instancesInTwoSchemasAreSeparate(TestDatabase db) {
    DataSource ds = db.dataSource();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM pg_tables WHERE tablename = 'balancer_flyway_history'"
                    + " AND schemaname IN ('tenant_a', 'tenant_b')"))
        .isEqualTo(2);
    assertThat(db.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname = 'balancer'"))
        .isZero();
    MessageBalancer a = MessageBalancer.builder(ds, "orders").schema("tenant_a").build();
    MessageBalancer b = MessageBalancer.builder(ds, "orders").schema("tenant_b").build();
    assertThat(a.schema()).isEqualTo("tenant_a");
    for (int i = 0; i < 6; i++) {
      a.storeMessage("k" + (i % 3), ("a" + i).getBytes(StandardCharsets.UTF_8));
    }
    for (int i = 0; i < 4; i++) {
      b.storeMessage("k" + (i % 2), ("b" + i).getBytes(StandardCharsets.UTF_8));
    }
    assertThat(a.operations().messageCount(a.group())).isEqualTo(6);
    assertThat(b.operations().messageCount(b.group())).isEqualTo(4);
    assertThat(b.operations().partitionKeys(b.group())).containsExactly("k0", "k1");

    Map<String, String> seenA = new ConcurrentHashMap<>();
    Map<String, String> seenB = new ConcurrentHashMap<>();
    BalancerDriver da = a.driver(BalancedHandlers.builder().on(record(seenA)).build());
    BalancerDriver dbr = b.driver(BalancedHandlers.builder().on(record(seenB)).build());
    assertThat(da.wakeChannel()).contains("messagepump_balancer_tenant_a");
    assertThat(dbr.wakeChannel()).contains("messagepump_balancer_tenant_b");
    try (MessagePump pa = pump(ds, "tenant-a", da);
        MessagePump pb = pump(ds, "tenant-b", dbr)) {
      pa.start();
      pb.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  seenA.size() == 4
                      && seenB.size() == 2
                      && b.operations().parkedKeys(b.group()).size() == 1
                      && a.operations().parkedKeys(a.group()).size() == 1);
    }
    assertThat(seenA.values()).allMatch(v -> v.startsWith("a"));
    assertThat(seenB.values()).allMatch(v -> v.startsWith("b"));
    // "k0" fails in both; each parked it in its own schema only.
    assertThat(a.operations().parkedKeys(a.group())).containsOnlyKeys("k0");
    assertThat(b.operations().parkedKeys(b.group())).containsOnlyKeys("k0");
    assertThat(a.operations().unpark(a.group(), "k0")).isTrue();
    assertThat(b.operations().parkedKeys(b.group())).containsOnlyKeys("k0");
    assertThat(BalancerOperations.of(ds, "tenant_a").groups())
        .singleElement()
        .satisfies(
            g -> {
              assertThat(g.group()).isEqualTo("orders");
              assertThat(g.messages()).isEqualTo(2);
            });
    assertThat(BalancerOperations.of(ds, "tenant_b").groups())
        .singleElement()
        .satisfies(
            g -> {
              assertThat(g.messages()).isEqualTo(2);
              assertThat(g.parked()).isEqualTo(1);
            });
  }

  /** Records what it handles, fails every message of key k0. */
  private static BalancedHandler record(Map<String, String> seen) {
    return (m, ctx) -> {
      if (m.partitionKey().equals("k0")) {
        throw new IllegalStateException("k0 fails");
      }
      seen.put(Long.toString(m.id()), new String(m.content(), StandardCharsets.UTF_8));
      return Result.ok();
    };
  }

  private static MessagePump pump(DataSource ds, String name, BalancerDriver driver) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .maxFailures(2)
        .build();
  }
}
