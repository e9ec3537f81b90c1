package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.testkit.PostgresExtension;

/** What a handler sees in its {@link BalancedContext}, and storing through it. */
@ExtendWith(PostgresExtension.class)
class BalancedContextIT {

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  /** Identity and metadata; the type is the balancer's, not the group (in the log's MDC too). */
  @Test
  void theContextNamesTheMessageAndItsPlace(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "ctx-group");
    Instant before = Instant.now().minusSeconds(60);
    long id = b.storeMessage("k", bytes("x"));
    Instant stored;
    try (var c = ds.getConnection();
        var ps = c.prepareStatement("SELECT received_at FROM balancer.messages WHERE id = ?")) {
      ps.setLong(1, id);
      try (var rs = ps.executeQuery()) {
        rs.next();
        stored = rs.getObject(1, java.time.OffsetDateTime.class).toInstant();
      }
    }
    AtomicReference<BalancedContext> seen = new AtomicReference<>();
    List<Integer> attempts = new ArrayList<>();
    PumpTester tester =
        Pumps.tester(
            ds,
            b.driver(
                BalancedHandlers.builder()
                    .on(
                        (m, ctx) -> {
                          seen.set(ctx);
                          attempts.add(ctx.attempt());
                          assertThat(ctx.tx().connection().getAutoCommit()).isFalse();
                          if (attempts.size() == 1) {
                            throw new IllegalStateException("once");
                          }
                          return Result.ok();
                        })
                    .build()));
    List<PumpTester.Result> results = tester.drainUntilIdle();
    assertThat(results)
        .extracting(PumpTester.Result::kind)
        .containsExactly(Kind.FAILED, Kind.HANDLED);
    // The pump's log lines take messageType (MDC) from the delivery: not the group any more.
    assertThat(results)
        .extracting(r -> r.delivery().messageType())
        .containsOnly(BalancerDriver.MESSAGE_TYPE);
    BalancedContext ctx = seen.get();
    assertThat(ctx.messageId()).isEqualTo(Long.toString(id));
    assertThat(ctx.messageType()).isEqualTo(BalancerDriver.MESSAGE_TYPE).isNotEqualTo(b.group());
    assertThat(ctx.group()).isEqualTo("ctx-group");
    assertThat(ctx.partitionKey()).isEqualTo("k");
    assertThat(ctx.receivedAt()).isAfter(before).isBefore(Instant.now().plusSeconds(60));
    // Read as microseconds since the epoch (not as a timestamp): the same instant, to the
    // microsecond.
    assertThat(ctx.receivedAt()).isEqualTo(stored);
    assertThat(ctx.correlationId()).isNull();
    assertThat(ctx.causationId()).isNull();
    assertThat(ctx.headers())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                BalancerDriver.PARTITION_GROUP_HEADER, "ctx-group",
                BalancerDriver.PARTITION_KEY_HEADER, "k"));
    assertThat(attempts).containsExactly(1, 2);
    assertThat(ctx.toString()).contains("ctx-group").doesNotContain("=k");
  }

  /**
   * Messages stored through the context join the same group in the delivery's transaction: kept
   * when it commits, gone when the delivery fails.
   */
  @Test
  void storeWritesIntoTheSameGroupInTheDeliverysTransaction(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "ctx-store");
    b.storeMessage("in", bytes("fail"));
    b.storeMessage("in", bytes("ok"));
    List<String> outs = new ArrayList<>();
    PumpTester tester =
        PumpTester.builder(
                ds,
                b.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              String body = text(m.content());
                              if (ctx.partitionKey().equals("out")) {
                                outs.add(body + " " + m.properties());
                                return Result.ok();
                              }
                              ctx.store("out", bytes("from " + body), Map.of("n", 1));
                              ctx.store("out", bytes("plain " + body));
                              if (body.equals("fail") && ctx.attempt() == 1) {
                                throw new IllegalStateException("after storing");
                              }
                              return Result.ok();
                            })
                        .build()))
            .batchSize(1)
            .maxFailures(5)
            .backoff(Pumps.TINY, Pumps.TINY)
            .build();
    List<PumpTester.Result> first = tester.runOnce();
    assertThat(first).extracting(PumpTester.Result::kind).containsExactly(Kind.FAILED);
    assertThat(b.operations().partitionKeys(b.group()))
        .containsExactly("in"); // the failed delivery stored nothing
    tester.drainUntilIdle();
    assertThat(outs)
        .containsExactly("from fail {n=1}", "plain fail {}", "from ok {n=1}", "plain ok {}");
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(BalancerOperations.of(ds).messageCount("ctx-store-other")).isZero();
  }

  /** The context checks what it stores as storeMessage does: a bad key fails the delivery. */
  @Test
  void storeValidatesLikeStoreMessage(DataSource ds) {
    MessageBalancer b = MessageBalancer.builder(ds, "ctx-bad").maxContentBytes(4).build();
    b.storeMessage("in", bytes("x"));
    List<Throwable> thrown = new ArrayList<>();
    PumpTester tester =
        PumpTester.builder(
                ds,
                b.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              for (Runnable r :
                                  List.<Runnable>of(
                                      () -> ctx.store(" ", bytes("x")),
                                      () -> ctx.store("k\0", bytes("x")),
                                      () -> ctx.store("k", null),
                                      () -> ctx.store("k", bytes("12345")),
                                      () -> ctx.store("k", bytes("x"), null))) {
                                try {
                                  r.run();
                                } catch (RuntimeException e) {
                                  thrown.add(e);
                                }
                              }
                              return Result.ok();
                            })
                        .build()))
            .build();
    assertThat(tester.runOnce()).extracting(PumpTester.Result::kind).containsExactly(Kind.HANDLED);
    assertThat(thrown).hasSize(5);
    assertThat(thrown.get(0)).isInstanceOf(IllegalArgumentException.class);
    assertThat(thrown.get(1)).isInstanceOf(IllegalArgumentException.class);
    assertThat(thrown.get(2)).isInstanceOf(NullPointerException.class);
    assertThat(thrown.get(3)).hasMessageContaining("maxContentBytes");
    assertThat(thrown.get(4)).isInstanceOf(NullPointerException.class);
    assertThat(b.operations().messageCount(b.group())).isZero();
    assertThat(b.operations().partitionCount(b.group())).isZero();
  }
}
