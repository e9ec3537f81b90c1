package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.Limits;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;

/**
 * The cluster-wide pause of a partition group: stored in {@code paused_groups}, honoured at
 * acquisition by every running pump, whichever instance ("process") paused it.
 */
@ExtendWith(PostgresExtension.class)
class GroupPauseIT {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static MessagePump pump(DataSource ds, BalancerDriver driver, String name) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(2)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(10), Duration.ofMillis(50))
        .build();
  }

  private static void store(MessageBalancer b, int n, String prefix) {
    for (int i = 0; i < n; i++) {
      b.storeMessage(prefix + (i % 3), (prefix + i).getBytes(StandardCharsets.UTF_8));
    }
  }

  @ParameterizedTest(name = "lockPartition={0}")
  @ValueSource(booleans = {true, false})
  void aPausedGroupIsNotAcquiredByARunningPumpAndResumes(boolean lockPartition, DataSource ds) {
    String g = "pause-" + lockPartition;
    String other = "steady-" + lockPartition;
    MessageBalancer paused = MessageBalancer.create(ds, g);
    MessageBalancer steady = MessageBalancer.create(ds, other);
    // The operator's handle on the group: another instance, as in another process.
    MessageBalancer operator = MessageBalancer.create(ds, g);
    AtomicInteger pausedSeen = new AtomicInteger();
    AtomicInteger steadySeen = new AtomicInteger();
    try (MessagePump p1 =
            pump(
                ds,
                paused.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              pausedSeen.incrementAndGet();
                              return Result.ok();
                            })
                        .build(),
                    BalancerDriverOptions.defaults().withLockPartition(lockPartition)),
                g);
        MessagePump p2 =
            pump(
                ds,
                steady.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              steadySeen.incrementAndGet();
                              return Result.ok();
                            })
                        .build(),
                    BalancerDriverOptions.defaults().withLockPartition(lockPartition)),
                other)) {
      p1.start();
      p2.start();
      store(paused, 6, "a");
      await().atMost(WAIT).until(() -> pausedSeen.get() == 6);

      assertThat(operator.operations().pauseGroup(operator.group(), "downstream maintenance"))
          .isTrue();
      assertThat(operator.operations().pauseGroup(operator.group(), "again")).isFalse();
      assertThat(paused.operations().isPaused(paused.group())).isTrue();
      assertThat(steady.operations().isPaused(steady.group())).isFalse();
      assertThat(BalancerOperations.of(ds).pausedGroups())
          .filteredOn(p -> p.name().equals(g))
          .singleElement()
          .satisfies(p -> assertThat(p.reason()).isEqualTo("downstream maintenance"));

      store(paused, 12, "b");
      store(steady, 12, "c");
      await().atMost(WAIT).until(() -> steadySeen.get() == 12);
      // The paused group's pump has polled many times meanwhile.
      await().pollDelay(Duration.ofMillis(500)).atMost(WAIT).until(() -> true);
      assertThat(pausedSeen.get()).isEqualTo(6);
      assertThat(paused.operations().messageCount(paused.group())).isEqualTo(12);

      assertThat(operator.operations().resumeGroup(operator.group())).isTrue();
      assertThat(operator.operations().resumeGroup(operator.group())).isFalse();
      assertThat(paused.operations().isPaused(paused.group())).isFalse();
      await().atMost(WAIT).until(() -> pausedSeen.get() == 18);
      await().atMost(WAIT).until(() -> paused.operations().messageCount(paused.group()) == 0);
    }
  }

  @Test
  void badReasonsAndGroupNamesAreRefusedBeforeAnythingIsSent(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "bad-input");
    assertThatThrownBy(() -> b.operations().pauseGroup(b.group(), "r\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reason");
    assertThatThrownBy(
            () -> b.operations().pauseGroup(b.group(), "r".repeat(Limits.MAX_REASON_CHARS + 1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("reason");
    assertThat(b.operations().isPaused(b.group())).isFalse();
    // The group is the balancer's own, checked when it is built.
    for (String bad : new String[] {"", "   ", "a\0b", "g".repeat(Limits.MAX_KEY_BYTES + 1)}) {
      assertThatThrownBy(() -> MessageBalancer.create(ds, bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("group");
    }
    assertThatThrownBy(() -> BalancerOperations.of(ds, "Bad-Schema").pausedGroups())
        .isInstanceOf(IllegalArgumentException.class);
    // A quote in a group name is data, bound, not SQL.
    MessageBalancer quoted = MessageBalancer.create(ds, "o'brien\"; DROP TABLE x; --");
    assertThat(quoted.operations().pauseGroup(quoted.group(), null)).isTrue();
    assertThat(quoted.operations().isPaused(quoted.group())).isTrue();
    assertThat(quoted.operations().resumeGroup(quoted.group())).isTrue();
  }
}
