package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** The figures of a page of keys read at once: the same as reading each key alone. */
@ExtendWith(PostgresExtension.class)
class PartitionStatsPageIT {

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  @Test
  void aPageOfKeysReadsWhatEachKeyReadsAlone(TestDatabase db) throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "stats-page");
    MessageBalancer other = MessageBalancer.create(db.dataSource(), "stats-other");
    for (int i = 0; i < 6; i++) {
      for (int j = 0; j <= i; j++) {
        b.storeMessage("key-" + i, "m".getBytes(StandardCharsets.UTF_8));
      }
    }
    other.storeMessage("key-2", "m".getBytes(StandardCharsets.UTF_8));
    db.execute(
        "UPDATE balancer.partitions SET parked_at = clock_timestamp(), parked_reason = 'full',"
            + " failures = 3 WHERE partition_group = 'stats-page' AND partition_key = 'key-4'");
    db.execute(
        "UPDATE balancer.partitions SET resume_at = clock_timestamp() + interval '1 hour',"
            + " failures = 1 WHERE partition_group = 'stats-page' AND partition_key = 'key-1'");

    List<String> asked = new ArrayList<>(List.of("key-5", "key-0", "missing", "key-4", "key-1"));
    asked.add("key-2");
    asked.add("key-3");
    try (Connection holder = db.dataSource().getConnection();
        Statement s = holder.createStatement()) {
      // A handler's transaction holds key-3's row, as a consumer does while it handles its head.
      holder.setAutoCommit(false);
      s.execute(
          "SELECT 1 FROM balancer.partitions WHERE partition_group = 'stats-page'"
              + " AND partition_key = 'key-3' FOR NO KEY UPDATE");

      List<PartitionStats> page = b.operations().partitionStats(b.group(), asked);
      List<PartitionStats> alone = new ArrayList<>();
      for (String k : asked) {
        b.operations().partitionStats(b.group(), k).ifPresent(alone::add);
      }
      assertThat(page)
          .extracting(PartitionStats::partitionKey)
          .containsExactly("key-5", "key-0", "key-4", "key-1", "key-2", "key-3");
      assertThat(page)
          .usingRecursiveFieldByFieldElementComparatorIgnoringFields("oldestAge")
          .containsExactlyElementsOf(alone);
      assertThat(page.get(0).messageCount()).isEqualTo(6);
      assertThat(page.get(4).messageCount()).isEqualTo(3); // not the other group's message
      assertThat(page.get(2).parked()).isTrue();
      assertThat(page.get(3).resumeAt()).isNotNull();
      assertThat(page.get(5).locked()).isTrue();
      assertThat(page.get(0).locked()).isFalse();
      assertThat(page).allMatch(p -> !p.oldestAge().isNegative());
      holder.rollback();
    }
    assertThat(b.operations().partitionStats(b.group(), List.of())).isEmpty();
    assertThat(b.operations().partitionStats(b.group(), List.of("missing"))).isEmpty();
  }

  @Test
  void refusesBadInputBeforeSending(TestDatabase db) {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "stats-bad");
    assertThatThrownBy(
            () ->
                b.operations()
                    .partitionStats(
                        b.group(), Collections.nCopies(BalancerOperations.MAX_STATS_KEYS + 1, "k")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most");
    assertThatThrownBy(() -> b.operations().partitionStats(b.group(), List.of("ok", "")))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.operations().partitionStats(b.group(), List.of("a\u0000b")))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.operations().partitionStats(b.group(), List.of("x".repeat(5_000))))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
