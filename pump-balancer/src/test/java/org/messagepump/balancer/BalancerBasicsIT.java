package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.internal.Acquisition;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
class BalancerBasicsIT {

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  @BeforeAll
  static void migrate(DataSource ds) {
    BalancerOperations.of(ds).migrate(); // idempotent: the fixture migrated already
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void storesAndIntrospectsFromTheDatabase(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "intro");
    long first = b.storeMessage("a", bytes("1"), Map.of("retry", 0));
    long second = b.storeMessage("a", bytes("2"));
    b.storeMessage("b", bytes("3"), "{\"x\": [1, 2]}");

    assertThat(second).isGreaterThan(first);
    assertThat(b.operations().partitionCount(b.group())).isEqualTo(2);
    assertThat(b.operations().messageCount(b.group())).isEqualTo(3);
    assertThat(b.operations().partitionKeys(b.group())).containsExactly("a", "b");
    PartitionStats a = b.operations().partitionStats(b.group(), "a").orElseThrow();
    assertThat(a.messageCount()).isEqualTo(2);
    assertThat(a.inFlight()).isFalse();
    assertThat(a.failures()).isZero();
    assertThat(a.oldestAge().isNegative()).isFalse();
    assertThat(b.operations().partitionStats(b.group(), "nope")).isEmpty();
    GroupStats g = b.operations().stats(b.group());
    assertThat(g.partitions()).isEqualTo(2);
    assertThat(g.messages()).isEqualTo(3);
    assertThat(BalancerOperations.of(ds).groups()).extracting(GroupStats::group).contains("intro");
    // Another group is separate.
    assertThat(BalancerOperations.of(ds).messageCount("intro-other")).isZero();
  }

  @Test
  void badInputIsRejectedAndNothingIsStored(TestDatabase db) {
    MessageBalancer b = MessageBalancer.builder(db.dataSource(), "bad").maxContentBytes(4).build();
    assertThatThrownBy(() -> b.storeMessage(null, bytes("x")))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("partitionKey");
    assertThatThrownBy(() -> b.storeMessage("  ", bytes("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitionKey");
    assertThatThrownBy(() -> b.storeMessage("k", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("content");
    assertThatThrownBy(() -> b.storeMessage("k", bytes("12345")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxContentBytes");
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), "[1]"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("JSON object");
    assertThatThrownBy(() -> b.storeMessage("k", bytes("x"), "{not json"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("JSON object");
    assertThatThrownBy(() -> MessageBalancer.builder(db.dataSource(), " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("group");
    assertThatThrownBy(() -> MessageBalancer.builder(db.dataSource(), "g").maxContentBytes(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxContentBytes");
    assertThatThrownBy(
            () -> BalancerDriverOptions.defaults().withLeaseDuration(java.time.Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseDuration");
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(
            db.queryLong("SELECT count(*) FROM balancer.partitions WHERE partition_group = 'bad'"))
        .isZero();
  }

  @Test
  void storesInsideTheCallersTransaction(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "caller-tx");
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      b.storeMessage(c, "k", bytes("rolled back"), null);
      c.rollback();
      long id = b.storeMessage(c, "k", bytes("kept"), "{}");
      assertThat(b.operations().messageCount(b.group())).isZero(); // not committed yet
      c.commit();
      assertThat(id).isPositive();
    }
    assertThat(b.operations().messageCount(b.group())).isEqualTo(1);
  }

  @Test
  void okRequeueBusyFailedAndParking(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "results");
    b.storeMessage("k", bytes("m1"), Map.of("retry", 0));
    b.storeMessage("k", bytes("m2"));
    b.storeMessage("other", bytes("o1"));
    List<String> seen = new ArrayList<>();
    java.util.concurrent.atomic.AtomicInteger m2Calls =
        new java.util.concurrent.atomic.AtomicInteger();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      String body = new String(m.content(), StandardCharsets.UTF_8);
                      seen.add(body + "@" + m.properties().get("retry"));
                      int retry = ((Number) m.properties().getOrDefault("retry", 0)).intValue();
                      if (body.equals("m1") && retry < 2) {
                        return Result.requeue(Map.of("retry", retry + 1));
                      }
                      if (body.equals("m2")) {
                        int call = m2Calls.incrementAndGet();
                        if (call == 1) {
                          assertThat(m.failures()).isZero();
                          throw new BusyException("not now");
                        }
                        if (call == 2) {
                          assertThat(m.failures()).isZero(); // Busy counts no failure
                          throw new IllegalStateException("boom");
                        }
                        assertThat(m.failures()).isEqualTo(1);
                      }
                      return Result.ok();
                    })
                .build());
    // m1 requeued twice (the key goes to the back each time: "other" is served in between).
    List<PumpTester.Result> results = Pumps.tester(ds, driver).drainUntilIdle();
    assertThat(results)
        .extracting(PumpTester.Result::kind)
        .containsExactly(
            Kind.HANDLED, // m1 requeued
            Kind.HANDLED, // o1
            Kind.HANDLED, // m1 requeued
            Kind.HANDLED, // m1
            Kind.BUSY, // m2
            Kind.FAILED, // m2
            Kind.HANDLED); // m2
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
    assertThat(seen).startsWith("m1@0", "o1@null", "m1@1", "m1@2");
    assertThat(m2Calls).hasValue(3);
  }

  @Test
  void aKeyIsParkedAfterMaxFailuresAndOthersGoOn(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "parking");
    b.storeMessage("bad", bytes("x"));
    b.storeMessage("good", bytes("y"));
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      if (m.partitionKey().equals("bad")) {
                        throw new IllegalStateException("always fails");
                      }
                      return Result.ok();
                    })
                .build());
    try (var pump =
        org.messagepump.core.engine.MessagePump.builder(ds)
            .name("parking")
            .driver(driver)
            .workers(2)
            .pollInterval(java.time.Duration.ofMillis(20))
            .backoff(java.time.Duration.ofMillis(10), java.time.Duration.ofMillis(20))
            .maxFailures(3)
            .build()) {
      pump.start();
      org.awaitility.Awaitility.await()
          .atMost(java.time.Duration.ofSeconds(60))
          .until(() -> b.operations().parkedKeys(b.group()).containsKey("bad"));
    }
    assertThat(b.operations().parkedKeys(b.group()).get("bad")).contains("always fails");
    assertThat(b.operations().partitionStats(b.group(), "bad").orElseThrow().failures())
        .isEqualTo(3);
    assertThat(b.operations().partitionStats(b.group(), "good")).isEmpty();
    assertThat(b.operations().stats(b.group()).parked()).isEqualTo(1);
    assertThat(b.operations().unpark(b.group(), "bad")).isTrue();
    assertThat(b.operations().parkedKeys(b.group())).isEmpty();
    assertThat(b.operations().partitionStats(b.group(), "bad").orElseThrow().failures()).isZero();
  }

  @Test
  void acquisitionIsOneIndexedStatement(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    // Many keys and messages, then the plan of the acquisition statement: index scans on the ready
    // index and the message order index, no sequential scan, no sort of a whole key.
    String plan = acquisitionPlans(db, "balancer", "explain", 20_000, 100_000, 1, 10);
    MessageBalancer b = MessageBalancer.create(ds, "explain");
    BalancerDriver driver =
        b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build());
    assertThat(Pumps.tester(ds, driver).runOnce())
        .extracting(PumpTester.Result::kind)
        .containsExactly(Kind.HANDLED);
    assertThat(plan).contains("paused_groups_pkey");
  }

  @Test
  void aSmallGroupIsAcquiredThroughTheReadyIndexToo(TestDatabase db) throws Exception {
    // 100 keys in one page (the bench's drain): with two bounds on both ranges of one statement
    // PostgreSQL estimated one matching key, and the generic plan of a batch of one read all 100
    // key rows and sorted them at each delivery. A batch of one now walks one range, and reads the
    // ready index with its two bounds. (For a batch of 10 of 100 keys PostgreSQL reads every key
    // row and sorts them, once per 10 deliveries: it expects 11 ready keys, nearly the whole
    // limit.)
    // A schema of its own: this class's other tests leave keys in the default one.
    // PostgreSQL 13 and 14 plan this one-page table as a sequential scan and a sort of its 100 key
    // rows (docs/compatibility.md): the same work as the index on one page, and the large group of
    // the test above is read through the index on every version.
    int major;
    try (Connection c = db.dataSource().getConnection()) {
      major = c.getMetaData().getDatabaseMajorVersion();
    }
    org.junit.jupiter.api.Assumptions.assumeTrue(
        major >= 15, "PostgreSQL 13 and 14 scan a one-page table of keys sequentially");
    BalancerOperations.of(db.dataSource(), "balancer_small").migrate();
    acquisitionPlans(db, "balancer_small", "small", 100, 5_000, 1);
  }

  /**
   * Stores {@code messages} messages over {@code keys} keys of {@code group} in {@code schema} and
   * checks the plans of the acquisition statements (a walk from a cursor and a wrapped walk's rest,
   * for each of {@code batchSizes}), as planned for the values and as the generic plan a connection
   * settles on: the ready index and the message order index, no sequential scan of the keys, no
   * sort, the pause check once per execution. Returns the plans.
   */
  private static String acquisitionPlans(
      TestDatabase db, String schema, String group, int keys, int messages, int... batchSizes)
      throws Exception {
    db.execute(
        "INSERT INTO "
            + schema
            + ".partitions (partition_group, partition_key, rotation)"
            + " SELECT '"
            + group
            + "', 'k' || i, nextval('"
            + schema
            + ".rotation') FROM generate_series(1, "
            + keys
            + ") i");
    db.execute(
        "INSERT INTO "
            + schema
            + ".messages (partition_group, partition_key, content)"
            + " SELECT '"
            + group
            + "', 'k' || (i % "
            + keys
            + "), '\\x00'::bytea FROM generate_series(1, "
            + messages
            + ") i");
    db.execute("ANALYZE " + schema + ".partitions");
    db.execute("ANALYZE " + schema + ".messages");
    long cursor = keys / 2;
    long ceiling = keys;
    var tables = org.messagepump.balancer.internal.BalancerTables.of(schema);
    StringBuilder all = new StringBuilder();
    // The bounds a1, a2, b1, b2 (by number): a walk from the middle of the lap.
    long[] walk = {0, cursor, ceiling, Long.MIN_VALUE, cursor};
    for (int max : batchSizes) {
      if (max == 1) {
        // A batch of one walks one range per statement: the keys after the cursor, up to the lap's
        // highest rotation, reading the rotation sequence's last value (no index step), or, once
        // the lap saw it drawn above the lap, looking for keys that joined above it, or (once one
        // did) moving every key it takes back ...
        all.append(
            checkPlans(
                db, group, Acquisition.text(tables, max, Acquisition.WALK_AFTER, 1), walk, 1));
        all.append(
            checkPlans(
                db,
                group,
                Acquisition.text(tables, max, Acquisition.WALK_AFTER | Acquisition.EXACT, 1),
                walk,
                2));
        all.append(
            checkPlans(
                db,
                group,
                Acquisition.text(tables, max, Acquisition.WALK_AFTER | Acquisition.MOVE_BACK, 1),
                walk,
                1));
        // ... and the next lap from the lowest rotation, reading its highest.
        all.append(
            checkPlans(
                db,
                group,
                Acquisition.text(tables, max, Acquisition.WALK_LAP, 1),
                new long[] {0, Long.MIN_VALUE, 0, 0, 0},
                2));
      } else {
        // A walk from the middle of the lap: (cursor, highest of the lap], then the next lap,
        // (MIN, cursor] or above the lap, as one range. The two ranges and the highest rotation,
        // and the keys that joined above the lap once the lap saw the sequence drawn above it.
        all.append(
            checkPlans(
                db, group, Acquisition.text(tables, max, Acquisition.WALK_OPEN, 1), walk, 3));
        all.append(
            checkPlans(
                db,
                group,
                Acquisition.text(tables, max, Acquisition.WALK_OPEN | Acquisition.EXACT, 1),
                walk,
                4));
        // Runs: up to 5 consecutive messages of each key (messagesPerTurn).
        all.append(
            checkPlans(
                db, group, Acquisition.text(tables, max, Acquisition.WALK_OPEN, 5), walk, 3));
      }
      if (keys < 1_000) {
        // The rest of a walk that wrapped round, rare (only past keys found empty): in a small
        // group PostgreSQL reads all key rows and sorts them for it, as it did for every walk.
        continue;
      }
      // The rest of a walk that wrapped round: nothing, then (last, cursor].
      all.append(
          checkPlans(
              db,
              group,
              Acquisition.text(tables, max, Acquisition.WALK_BOUNDED, 1),
              new long[] {0, Long.MIN_VALUE, Long.MIN_VALUE, cursor / 2, cursor},
              2));
    }
    return all.toString();
  }

  /**
   * The plans of {@code text} for {@code group} and the bounds {@code bounds} (by number), checked;
   * returned. {@code readyIndexReads}: how many scans of the ready index the plan has (one per
   * range, one for keys that joined above the lap, one for the lap's highest rotation).
   */
  private static String checkPlans(
      TestDatabase db, String group, Acquisition.Text text, long[] bounds, int readyIndexReads)
      throws Exception {
    String sql = text.sql();
    int[] roles = text.roles();
    assertThat(sql.chars().filter(ch -> ch == '?').count()).isEqualTo(roles.length);
    Object[] values = new Object[roles.length];
    StringBuilder types = new StringBuilder();
    for (int i = 0; i < roles.length; i++) {
      values[i] = roles[i] == 0 ? group : (Object) bounds[roles[i]];
      types.append(i > 0 ? ", " : "").append(roles[i] == 0 ? "text" : "bigint");
    }
    String plan;
    String generic;
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (var ps = c.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF) " + sql)) {
        for (int i = 0; i < values.length; i++) {
          ps.setObject(i + 1, values[i]);
        }
        plan = lines(ps);
      }
      String numbered = sql;
      StringBuilder literals = new StringBuilder();
      for (int i = 1; i <= values.length; i++) {
        numbered = numbered.replaceFirst("\\?", "\\$" + i);
        literals.append(i > 1 ? ", " : "").append(sqlLiteral(values[i - 1]));
      }
      try (var st = c.createStatement()) {
        st.execute("PREPARE acquire_plan(" + types + ") AS " + numbered);
        st.execute("SET LOCAL plan_cache_mode = force_generic_plan");
      }
      try (var ps =
          c.prepareStatement("EXPLAIN (COSTS OFF) EXECUTE acquire_plan(" + literals + ")")) {
        generic = lines(ps);
      }
      c.rollback();
      try (var st = c.createStatement()) {
        st.execute("DEALLOCATE acquire_plan");
      }
    }
    for (String p : List.of(generic, plan)) {
      assertThat(p).contains("partitions_ready").contains("messages_key_order");
      // Each message is deleted by its row address, not through the primary key, and no probe
      // per message looks for a later one (the key's scan reads one more).
      assertThat(p).contains("Tid Scan").doesNotContain("messages_pkey");
      assertThat(p).doesNotContain("Seq Scan on partitions").doesNotContain("Sort");
      // The pause check is evaluated once per execution (an InitPlan and a one-time filter), not
      // once per key row.
      assertThat(p).contains("One-Time Filter");
      // The ready index is read by each range of the walk, and the steps for keys that joined above
      // the lap and for its highest rotation are InitPlans: once per execution, not per key.
      assertThat(count(p, "using partitions_ready")).isEqualTo(readyIndexReads);
    }
    return generic + plan;
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
      n++;
    }
    return n;
  }

  /** A test's own value as an SQL literal: a number, or a string of letters and digits. */
  private static String sqlLiteral(Object v) {
    if (v instanceof Long) {
      return v.toString();
    }
    assertThat(v.toString()).matches("[a-z0-9]+");
    return "'" + v + "'";
  }

  @Test
  void theBoundAcquisitionSettlesOnOneGenericPlanPerConnection(DataSource ds) throws Exception {
    // The group is a bind value now; the statement must still be planned once per connection
    // (a custom plan at every execution cost 0.38 ms per delivery before the values were inlined).
    MessageBalancer b = MessageBalancer.create(ds, "generic-plan");
    for (int i = 0; i < 50; i++) {
      b.storeMessage("k" + i, bytes("x"));
    }
    BalancerDriver driver =
        b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build());
    try (Connection c = ds.getConnection()) {
      // A pooled connection carries the statements and plan counts of the tests before this one;
      // start from none, so the counts below are this loop's alone (pgjdbc forgets its own
      // server-prepared statements when it sees DISCARD ALL).
      try (var discard = c.createStatement()) {
        discard.execute("DISCARD ALL");
      }
      c.setAutoCommit(false);
      org.messagepump.core.Tx tx = org.messagepump.core.Tx.of(c);
      for (int i = 0; i < 30; i++) {
        assertThat(driver.acquire(tx, 3)).hasSize(3);
        c.rollback();
      }
      // pg_prepared_statements counts plans from PostgreSQL 14 on.
      org.junit.jupiter.api.Assumptions.assumeTrue(
          c.getMetaData().getDatabaseMajorVersion() >= 14,
          "pg_prepared_statements has no plan counts before PostgreSQL 14");
      try (var ps =
              c.prepareStatement(
                  "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                      + " WHERE statement LIKE '%for no key update skip locked%'"
                      + " AND statement NOT LIKE '%pg_prepared_statements%'");
          ResultSet rs = ps.executeQuery()) {
        // Each acquisition statement the connection prepared (after five uses; the rest of a
        // wrapped walk is another text) is planned five times at most, then runs its generic
        // plan.
        long generic = 0;
        while (rs.next()) {
          generic += rs.getLong(1);
          assertThat(rs.getLong(2)).isLessThanOrEqualTo(5);
        }
        assertThat(generic).as("the acquisition is server-prepared").isGreaterThanOrEqualTo(15);
      }
      c.rollback();
    }
  }

  private static String lines(java.sql.PreparedStatement ps) throws java.sql.SQLException {
    StringBuilder sb = new StringBuilder();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        sb.append(rs.getString(1)).append('\n');
      }
    }
    return sb.toString();
  }

  @Test
  void oneAcquisitionNeverReturnsAKeyTwice(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "batch");
    long a1 = b.storeMessage("a", bytes("1"));
    b.storeMessage("a", bytes("2"));
    for (boolean lock : new boolean[] {true, false}) {
      // An empty key row (as left behind when a producer rolled back) makes acquisition go round
      // again; the second round must not return "a" again, which this transaction already holds.
      db.execute(
          "INSERT INTO balancer.partitions (partition_group, partition_key, rotation)"
              + " VALUES ('batch', 'empty-"
              + lock
              + "', nextval('balancer.rotation'))");
      // Requeue: "a" keeps its messages for the next round.
      BalancerDriver driver =
          b.driver(
              BalancedHandlers.builder().on((m, ctx) -> Result.requeue()).build(),
              BalancerDriverOptions.defaults().withLockPartition(lock));
      List<PumpTester.Result> r = PumpTester.builder(ds, driver).batchSize(4).build().runOnce();
      assertThat(r).as("lockPartition %s", lock).hasSize(1);
      assertThat(r.get(0).messageId()).isEqualTo(Long.toString(a1));
      assertThat(r.get(0).kind()).isEqualTo(Kind.HANDLED);
      // The empty row is cleaned up by acquisition.
      assertThat(b.operations().partitionKeys(b.group())).containsExactly("a");
    }
    PumpTester tester =
        Pumps.tester(ds, b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build()));
    assertThat(Pumps.step(tester)).isEqualTo(a1);
    assertThat(Pumps.step(tester)).isPositive();
    assertThat(b.operations().partitionKeys(b.group())).isEmpty();
  }

  @Test
  void metersAreRegistered(DataSource ds) throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MessageBalancer b = MessageBalancer.builder(ds, "metered").meterRegistry(registry).build();
    b.storeMessage("k", bytes("x"));
    b.storeMessage("k", bytes("y"));
    assertThat(
            registry.get("messagepump.balancer.messages").tag("group", "metered").gauge().value())
        .isEqualTo(2.0);
    BalancerDriver driver =
        b.driver(BalancedHandlers.builder().on((m, ctx) -> Result.ok()).build());
    Pumps.step(Pumps.tester(ds, driver));
    assertThat(
            registry
                .get("messagepump.balancer.end_to_end.duration")
                .tag("group", "metered")
                .timer()
                .count())
        .isEqualTo(1);
    // Stored to removed, by the database clock: positive, and less than this test has run.
    assertThat(
            registry
                .get("messagepump.balancer.end_to_end.duration")
                .tag("group", "metered")
                .timer()
                .totalTime(java.util.concurrent.TimeUnit.MICROSECONDS))
        .isPositive()
        .isLessThan(600_000_000.0);
    assertThat(
            registry
                .get("messagepump.balancer.handler.duration")
                .tag("result", "ok")
                .timer()
                .count())
        .isEqualTo(1);
    assertThat(
            registry
                .get("messagepump.balancer.storage.duration")
                .tag("operation", "store")
                .timer()
                .count())
        .isEqualTo(2);
    assertThat(registry.get("messagepump.balancer.partitions").gauge().value()).isEqualTo(1.0);
    assertThat(registry.get("messagepump.balancer.oldest.age").gauge().value()).isNotNegative();
  }

  /**
   * Acquisition reads a key's head id without a row lock and deletes that row, which decides on its
   * newest version: here heads with a delete and a properties update that rolled back, and a lock
   * that was released (each leaves a non-zero xmax). They must still be delivered, once each and in
   * order, with the properties they really have.
   */
  @Test
  void headsWithAWriterThatRolledBackAreStillDeliveredInOrder(TestDatabase db) throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "touched");
    long m1 = b.storeMessage("a", bytes("m1"), Map.of("v", 1));
    long m2 = b.storeMessage("a", bytes("m2"), Map.of("v", 2));
    long m3 = b.storeMessage("b", bytes("m3"), Map.of("v", 3));
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      String[] writes = {
        "DELETE FROM balancer.messages WHERE id = ?",
        "UPDATE balancer.messages SET properties = '{\"v\": 9}' WHERE id = ?",
        "SELECT 1 FROM balancer.messages WHERE id = ? FOR UPDATE"
      };
      long[] ids = {m1, m2, m3};
      for (int i = 0; i < ids.length; i++) {
        try (var ps = c.prepareStatement(writes[i])) {
          ps.setLong(1, ids[i]);
          ps.execute();
        }
      }
      c.rollback();
    }
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM balancer.messages WHERE xmax::text::bigint <> 0"
                    + " AND partition_group = 'touched'"))
        .as("the rolled-back writers left their ids on the rows")
        .isEqualTo(3);
    List<String> seen = new ArrayList<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      seen.add(
                          new String(m.content(), StandardCharsets.UTF_8) + "=" + m.properties());
                      return Result.ok();
                    })
                .build());
    List<PumpTester.Result> results = Pumps.tester(db.dataSource(), driver).drainUntilIdle();
    assertThat(results).extracting(PumpTester.Result::kind).containsOnly(Kind.HANDLED);
    assertThat(seen).containsExactlyInAnyOrder("m1={v=1}", "m2={v=2}", "m3={v=3}");
    assertThat(seen.indexOf("m1={v=1}")).isLessThan(seen.indexOf("m2={v=2}"));
    assertThat(b.operations().messageCount(b.group())).isZero();
  }

  /**
   * Acquisition deletes the head it delivers (the success bookkeeping up front); every outcome that
   * keeps the message writes it back. A message that fails after its handler wrote (the write is
   * rolled back), is Busy, is requeued with new properties and is handed off must come back each
   * time with its id, content, received_at (to the microsecond) and attempts, still at the head of
   * its key; its properties change only with the requeue.
   */
  @Test
  void aKeptMessageIsWrittenBackUnchangedAtTheHeadOfItsKey(TestDatabase db) throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "kept");
    db.execute("CREATE TABLE kept_side (n int)");
    long m1 = b.storeMessage("k", bytes("m1"), Map.of("v", 1));
    long m2 = b.storeMessage("k", bytes("m2"));
    String stored =
        "SELECT id || '/' || encode(content, 'hex') || '/' || (extract(epoch FROM received_at)"
            + " * 1000000)::bigint || '/' || attempts FROM balancer.messages WHERE id = "
            + m1;
    String before = db.queryString(stored);
    List<String> seen = new ArrayList<>();
    java.util.concurrent.atomic.AtomicInteger calls =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicReference<java.util.UUID> token =
        new java.util.concurrent.atomic.AtomicReference<>();
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      seen.add(
                          new String(m.content(), StandardCharsets.UTF_8)
                              + "#"
                              + m.id()
                              + "@"
                              + m.receivedAt()
                              + m.properties());
                      if (m.id() != m1) {
                        return Result.ok();
                      }
                      switch (calls.incrementAndGet()) {
                        case 1 -> {
                          try (var st = ctx.tx().connection().createStatement()) {
                            st.execute("INSERT INTO kept_side VALUES (1)");
                          }
                          throw new IllegalStateException("after a write");
                        }
                        case 2 -> {
                          throw new BusyException("not now");
                        }
                        case 3 -> {
                          return Result.requeue(Map.of("v", 2));
                        }
                        case 4 -> {
                          token.set(m.handoffToken());
                          return Result.handoff(java.time.Duration.ofMinutes(5));
                        }
                        default -> throw new AssertionError("m1 delivered after its hand-off");
                      }
                    })
                .build());
    PumpTester tester = Pumps.tester(db.dataSource(), driver);
    List<Kind> kinds = new ArrayList<>();
    List<String> rows = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      kinds.add(tester.runOnce().get(0).kind());
      rows.add(String.valueOf(db.queryString(stored)));
    }
    assertThat(kinds).containsExactly(Kind.FAILED, Kind.BUSY, Kind.HANDLED, Kind.HANDLED);
    assertThat(rows).containsOnly(before);
    assertThat(db.queryLong("SELECT count(*) FROM kept_side")).as("the failed write").isZero();
    String first = seen.get(0).substring(0, seen.get(0).indexOf('{'));
    assertThat(seen)
        .containsExactly(first + "{v=1}", first + "{v=1}", first + "{v=1}", first + "{v=2}");
    // Handed off: the key is blocked and m2 waits behind m1.
    assertThat(tester.runOnce()).isEmpty();
    var handedOff = b.operations().partitionStats(b.group(), "k").orElseThrow();
    assertThat(handedOff.leasedMessageId()).isEqualTo(m1);
    assertThat(b.operations().messageCount(b.group())).isEqualTo(2);
    // Confirmed: m1 is gone and m2 comes next.
    assertThat(b.operations().confirm(m1, token.get())).isEqualTo(LeaseResult.APPLIED);
    assertThat(Pumps.step(tester)).isEqualTo(m2);
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
    db.execute("DROP TABLE kept_side");
  }
}
