package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.core.BusyException;
import org.messagepump.core.engine.MessagePump;

/**
 * A representative run of the balancer with hostile values (quotes, backslashes, SQL in keys):
 * every write path, acquisition through a real pump (with and without lockPartition, a second round
 * with excluded keys), every result, parking, the reaper, and the operations. Asserts that every
 * value comes back exactly as written. Shared by the SQL-safety tests and the least-privilege test.
 */
final class Workload {

  /** Values a string-built statement would break on, or run. */
  static final String GROUP = "gr'p \\' \" \\\\ $$ $x$";

  static final String EVIL_KEY = "x\\'; CREATE TABLE pwned (); --";

  static final List<String> OK_KEYS =
      List.of(EVIL_KEY, "it's", "back\\slash", "E'\\x27'", "$$dollar$$", "\"quoted\"", "漢字");

  static final String PROPS = "{\"q\":\"it's \\\\ \\\" \\\\' x\",\"n\":[1,2.5]}";

  private Workload() {}

  record Seen(String key, String content, String properties) {}

  /**
   * Runs the workload on {@code ds} in {@code schema}; {@code emptyKeyRow} creates a key row with
   * no message (as a producer's rollback leaves it) in that group, to force a second acquisition
   * round that excludes the keys already taken.
   */
  static void run(DataSource ds, String schema, java.util.function.Consumer<String> emptyKeyRow)
      throws Exception {
    MessageBalancer b = MessageBalancer.builder(ds, GROUP).schema(schema).build();
    Map<String, Seen> stored = new ConcurrentHashMap<>();
    for (String key : OK_KEYS) {
      String content = "content of " + key;
      b.storeMessage(key, bytes(content), PROPS);
      stored.put(key, new Seen(key, content, PROPS));
    }
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      b.storeMessage(c, "caller's\\tx", bytes("in the caller's transaction"), "{\"a\":\"'\"}");
      c.commit();
      stored.put(
          "caller's\\tx", new Seen("caller's\\tx", "in the caller's transaction", "{\"a\":\"'\"}"));
    }
    b.storeMessage("fail'\\", bytes("fails"), Map.of("why", "it's \\ broken"));
    b.storeMessage("requeue'\\", bytes("requeued"));
    b.storeMessage("handoff'\\", bytes("handed off"));
    b.storeMessage("expire'\\", bytes("lease expires"));
    b.storeMessage("busy'\\", bytes("busy once"));
    emptyKeyRow.accept("empty'\\key");

    Map<String, Seen> seen = new ConcurrentHashMap<>();
    List<BalancedMessage> handedOff = new CopyOnWriteArrayList<>();
    Map<String, Boolean> once = new ConcurrentHashMap<>();
    BalancedHandler handler =
        (m, ctx) -> {
          String key = m.partitionKey();
          assertThat(m.group()).isEqualTo(GROUP);
          switch (key) {
            case "fail'\\":
              throw new IllegalStateException("failed on '" + key + "' \\ \0 nul");
            case "requeue'\\":
              if (once.putIfAbsent(key, true) == null) {
                return Result.requeue(Map.of("retry", "it's \\ again"));
              }
              assertThat(m.properties()).containsEntry("retry", "it's \\ again");
              seen.put(key, new Seen(key, text(m.content()), m.propertiesJson()));
              return Result.ok();
            case "handoff'\\":
              handedOff.add(m);
              return Result.handoff(Duration.ofMinutes(5));
            case "expire'\\":
              return Result.handoff(Duration.ofMillis(1));
            case "busy'\\":
              if (once.putIfAbsent(key, true) == null) {
                throw new BusyException("busy 'now' \\");
              }
              seen.put(key, new Seen(key, text(m.content()), m.propertiesJson()));
              return Result.ok();
            default:
              seen.put(key, new Seen(key, text(m.content()), m.propertiesJson()));
              return Result.ok();
          }
        };
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder().on(handler).build(),
            BalancerDriverOptions.defaults()
                .withLeaseOwner("owner 'o' \\")
                .withMaxAttempts(1)
                .withReapInterval(Duration.ofMillis(20)));
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("workload")
            .driver(driver)
            .workers(1)
            .batchSize(4)
            .pollInterval(Duration.ofMillis(20))
            .backoff(Duration.ofMillis(5), Duration.ofMillis(20))
            .maxFailures(2)
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  seen.keySet().containsAll(stored.keySet())
                      && seen.containsKey("requeue'\\")
                      && seen.containsKey("busy'\\")
                      && handedOff.size() == 1
                      && b.operations()
                          .parkedKeys(b.group())
                          .keySet()
                          .containsAll(List.of("fail'\\", "expire'\\")));
    }
    for (Seen s : stored.values()) {
      Seen got = seen.get(s.key());
      assertThat(got.content()).isEqualTo(s.content());
      assertThat(Json.tree(got.properties())).isEqualTo(Json.tree(s.properties()));
    }
    assertThat(b.operations().parkedKeys(b.group()).get("fail'\\"))
        .contains("failed on 'fail'\\' \\");

    // Operations, all with the hostile values.
    assertThat(b.operations().partitionKeys(b.group()))
        .contains("fail'\\", "expire'\\", "handoff'\\");
    assertThat(b.operations().partitionStats(b.group(), "fail'\\").orElseThrow().failures())
        .isEqualTo(2);
    assertThat(
            b.operations().partitionStats(b.group(), "handoff'\\").orElseThrow().leasedMessageId())
        .isNotNull();
    assertThat(b.operations().stats(b.group()).parked()).isEqualTo(2);
    assertThat(BalancerOperations.of(ds, schema).groups())
        .extracting(GroupStats::group)
        .contains(GROUP);
    BalancedMessage h = handedOff.get(0);
    assertThat(b.operations().extendLease(h.id(), h.handoffToken(), Duration.ofMinutes(1)))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(b.operations().confirm(h.id(), UUID.randomUUID()))
        .isEqualTo(LeaseResult.STALE_TOKEN);
    assertThat(BalancerOperations.of(ds, schema).confirm(h.id(), h.handoffToken()))
        .isEqualTo(LeaseResult.APPLIED);
    assertThat(b.operations().unpark(b.group(), "fail'\\")).isTrue();
    assertThat(b.operations().unpark(b.group(), "expire'\\")).isTrue();

    // The same group without lockPartition: key rotation on its own transaction, then the head.
    b.storeMessage("free'\\", bytes("free"), PROPS);
    Map<String, String> freeSeen = new ConcurrentHashMap<>();
    BalancerDriver free =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      freeSeen.put(m.partitionKey(), text(m.content()));
                      return Result.ok();
                    })
                .build(),
            BalancerDriverOptions.defaults().withLockPartition(false));
    emptyKeyRow.accept("empty'\\key2");
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("workload-free")
            .driver(free)
            .workers(1)
            .batchSize(4)
            .pollInterval(Duration.ofMillis(20))
            .backoff(Duration.ofMillis(5), Duration.ofMillis(20))
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> b.operations().messageCount(b.group()) == 0);
    }
    assertThat(freeSeen).containsEntry("free'\\", "free").containsKey("fail'\\");
    assertThat(b.operations().parkedKeys(b.group())).isEmpty();
  }

  /** Inserts a key row without messages through {@code owner} (not the data source under test). */
  static java.util.function.Consumer<String> emptyKeyRow(DataSource owner, String schema) {
    return key -> {
      try (Connection c = owner.getConnection();
          var ps =
              c.prepareStatement(
                  "INSERT INTO "
                      + schema
                      + ".partitions (partition_group, partition_key, rotation)"
                      + " VALUES (?, ?, nextval('"
                      + schema
                      + ".rotation'))")) {
        ps.setString(1, GROUP);
        ps.setString(2, key);
        ps.executeUpdate();
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException(e);
      }
    };
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  /** JSON comparison that ignores formatting. */
  static final class Json {
    private static final com.fasterxml.jackson.databind.ObjectMapper M =
        new com.fasterxml.jackson.databind.ObjectMapper();

    static com.fasterxml.jackson.databind.JsonNode tree(String json) throws Exception {
      return M.readTree(json);
    }
  }
}
