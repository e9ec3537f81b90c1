package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.Limits;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Every write API and option refuses bad input before anything reaches PostgreSQL: an exception
 * naming the argument and the limit, nothing stored, the caller's transaction intact.
 */
@ExtendWith(PostgresExtension.class)
class InputValidationIT {

  /** 512 CJK characters: 1,536 UTF-8 bytes, which PostgreSQL's index entries cannot all hold. */
  private static final String CJK_512 = "漢".repeat(512);

  /** Exactly {@link Limits#MAX_KEY_BYTES} bytes: 170 three-byte characters and two ASCII ones. */
  private static final String KEY_AT_LIMIT = "漢".repeat(170) + "ab";

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void identifiersAreCheckedForNullNulBlankAndBytes(TestDatabase db) {
    DataSource ds = db.dataSource();
    assertThatThrownBy(() -> MessageBalancer.builder(ds, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("group");
    assertThatThrownBy(() -> MessageBalancer.builder(ds, ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("group");
    assertThatThrownBy(() -> MessageBalancer.builder(ds, "g\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("group")
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> MessageBalancer.builder(ds, CJK_512))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("group")
        .hasMessageContaining("512 UTF-8 bytes");
    assertThatThrownBy(() -> MessageBalancer.builder(null, "g"))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("dataSource");

    MessageBalancer b = MessageBalancer.create(ds, "ids");
    assertThatThrownBy(() -> b.storeMessage("k\0", bytes("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitionKey")
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> b.storeMessage(CJK_512, bytes("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitionKey")
        .hasMessageContaining("512 UTF-8 bytes");
    assertThatThrownBy(() -> b.storeMessage("", bytes("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitionKey");
    assertThatThrownBy(() -> b.operations().partitionStats(b.group(), CJK_512))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitionKey");
    assertThatThrownBy(() -> b.operations().unpark(b.group(), "\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitionKey");
    assertThatThrownBy(() -> BalancerDriverOptions.defaults().withLeaseOwner("me\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseOwner");
    assertThatThrownBy(() -> BalancerDriverOptions.defaults().withLeaseOwner(CJK_512))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseOwner");
    assertThat(b.operations().messageCount(b.group())).isZero();
  }

  @Test
  void theOperatorChecksTheGroupBeforeSendingAnything(DataSource ds) {
    BalancerOperations ops = BalancerOperations.of(ds);
    String tooLong = "g".repeat(Limits.MAX_KEY_BYTES + 1);
    for (String bad : new String[] {" ", "a\0b", tooLong}) {
      assertThatThrownBy(() -> ops.messageCount(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("group");
      assertThatThrownBy(() -> ops.pauseGroup(bad, "maintenance"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("group");
      assertThatThrownBy(() -> ops.unpark(bad, "k"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("group");
    }
    assertThatThrownBy(() -> ops.stats(null)).hasMessageContaining("group");
    assertThat(ops.pausedGroups()).isEmpty();
    assertThatThrownBy(() -> BalancerOperations.of(ds, "Bad-Schema"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema");
    assertThatThrownBy(() -> BalancerOperations.of(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void groupAndKeyAtTheLimitFitTheIndexes(DataSource ds) throws Exception {
    // Group and key of 512 bytes each, made of three-byte characters (hard to compress), go into
    // the (partition_group, partition_key, id) index and the primary key of the key rows.
    String group = "漢".repeat(170) + "gr";
    assertThat(group.getBytes(StandardCharsets.UTF_8)).hasSize(Limits.MAX_KEY_BYTES);
    assertThat(KEY_AT_LIMIT.getBytes(StandardCharsets.UTF_8)).hasSize(Limits.MAX_KEY_BYTES);
    MessageBalancer b = MessageBalancer.create(ds, group);
    b.storeMessage(KEY_AT_LIMIT, bytes("1"));
    b.storeMessage(KEY_AT_LIMIT + "", bytes("2"));
    var tester =
        Pumps.tester(ds, b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build()));
    assertThat(Pumps.step(tester)).isPositive();
    assertThat(b.operations().partitionKeys(b.group())).containsExactly(KEY_AT_LIMIT);
    assertThat(Pumps.step(tester)).isPositive();
    assertThat(b.operations().messageCount(b.group())).isZero();
  }

  @Test
  void contentAndPropertiesAreCheckedAgainstTheLimits(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "sizes");
    assertThatThrownBy(() -> b.storeMessage("k", new byte[Limits.DEFAULT_MAX_PAYLOAD_BYTES + 1]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("content")
        .hasMessageContaining(Integer.toString(Limits.DEFAULT_MAX_PAYLOAD_BYTES));
    // 5 MB of properties were accepted before; the default limit is 64 KiB.
    String big = "{\"p\":\"" + "x".repeat(5_000_000) + "\"}";
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), big))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("properties")
        .hasMessageContaining(Integer.toString(Limits.DEFAULT_MAX_PROPERTIES_BYTES));
    Map<String, Object> bigMap = Map.of("p", "x".repeat(70_000));
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), bigMap))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("properties");
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), "{\"a\":\"\\u0000\"}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), Map.of("a", "nul\0inside")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), "{\"n\": 1e999999}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("number");
    Map<String, Object> nullValue = new HashMap<>();
    nullValue.put("a", null); // a JSON null is a value like any other
    assertThat(b.storeMessage("k", bytes("x"), nullValue)).isPositive();
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), (Map<String, ?>) null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("properties");
    assertThat(b.operations().messageCount(b.group())).isEqualTo(1);

    // Configurable: smaller and larger limits through the builder.
    MessageBalancer small =
        MessageBalancer.builder(ds, "sizes-small")
            .limits(Limits.defaults().withMaxPropertiesBytes(16).withMaxPayloadBytes(4))
            .build();
    assertThat(small.maxContentBytes()).isEqualTo(4);
    assertThatThrownBy(() -> small.storeMessage("k", bytes("x"), "{\"a\":\"0123456789abc\"}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("16");
    assertThatThrownBy(() -> small.storeMessage("k", bytes("12345")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("4");
    MessageBalancer large =
        MessageBalancer.builder(ds, "sizes-large")
            .limits(Limits.defaults().withMaxPropertiesBytes(6_000_000))
            .build();
    assertThat(large.storeMessage("k", bytes("x"), big)).isPositive();
    assertThatThrownBy(() -> MessageBalancer.builder(ds, "g").limits(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("limits");
  }

  @Test
  void durationsAndOptionsAreChecked(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "options");
    Duration tooLong = Limits.MAX_DELAY.plusDays(1);
    assertThatThrownBy(() -> BalancerDriverOptions.defaults().withLeaseDuration(tooLong))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseDuration");
    assertThatThrownBy(() -> BalancerDriverOptions.defaults().withLeaseDuration(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("leaseDuration");
    assertThatThrownBy(
            () -> BalancerDriverOptions.defaults().withReapInterval(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reapInterval");
    assertThatThrownBy(() -> b.operations().extendLease(1, UUID.randomUUID(), tooLong))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("duration");
    assertThatThrownBy(() -> b.operations().requeue(1, UUID.randomUUID(), "{\"a\":\"\\u0000\"}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> b.operations().confirm(1, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("token");
    assertThatThrownBy(() -> MessageBalancer.builder(ds, "g").schema("Bad-Schema"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema");
    assertThatThrownBy(() -> MessageBalancer.builder(ds, "g").schema("x".repeat(41)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema");
    assertThatThrownBy(() -> MessageBalancer.builder(ds, "g").schema("pg_catalog"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema");
    assertThatThrownBy(() -> BalancerOperations.of(ds, "a\"; DROP TABLE x; --").migrate())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema");
    assertThatThrownBy(() -> BalancerOperations.of(ds, "balancer").grantStatements("r\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("role");
    assertThatThrownBy(() -> BalancerOperations.of(ds, "balancer").grantStatements("r".repeat(64)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("role");
    assertThat(BalancerOperations.of(ds, "balancer").grantStatements("we\"ird"))
        .allMatch(s -> s.endsWith(" TO \"we\"\"ird\""));
  }

  @Test
  void theCallersTransactionSurvivesARejectedStore(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "survives");
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      long first = b.storeMessage(c, "k", bytes("1"), null);
      assertThatThrownBy(() -> b.storeMessage(c, CJK_512, bytes("x"), null))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> b.storeMessage(c, "k", bytes("x"), "{\"a\":\"\\u0000\"}"))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> b.storeMessage(c, "k\0", bytes("x"), null))
          .isInstanceOf(IllegalArgumentException.class);
      // The transaction is not aborted: it runs a statement of its own and commits.
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 41 + 1")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isEqualTo(42);
      }
      long second = b.storeMessage(c, "k", bytes("2"), "{}");
      c.commit();
      assertThat(second).isGreaterThan(first);
    }
    assertThat(b.operations().messageCount(b.group())).isEqualTo(2);
  }

  @Test
  void aHandlerFailureWhoseMessageHoldsNulEndsParked(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "nul-reason");
    b.storeMessage("bad", bytes("x"));
    b.storeMessage("good", bytes("y"));
    AtomicInteger good = new AtomicInteger();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      if (m.partitionKey().equals("bad")) {
                        throw new IllegalStateException("broken\0value " + "z".repeat(5_000));
                      }
                      good.incrementAndGet();
                      return Result.ok();
                    })
                .build());
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("nul-reason")
            .driver(driver)
            .workers(1)
            .pollInterval(Duration.ofMillis(50))
            .backoff(Duration.ofMillis(10), Duration.ofMillis(50))
            .maxFailures(3)
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> b.operations().parkedKeys(b.group()).containsKey("bad"));
    }
    assertThat(good).hasValue(1);
    String reason = b.operations().parkedKeys(b.group()).get("bad");
    assertThat(reason).contains("broken").doesNotContain("\0");
    assertThat(reason.length()).isLessThanOrEqualTo(Limits.MAX_REASON_CHARS + 100);
    assertThat(b.operations().partitionStats(b.group(), "bad").orElseThrow().failures())
        .isEqualTo(3);
  }
}
