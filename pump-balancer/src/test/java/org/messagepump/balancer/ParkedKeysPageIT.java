package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Parked keys a page at a time: the same keys, in the same order, as the whole list. */
@ExtendWith(PostgresExtension.class)
class ParkedKeysPageIT {

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  @Test
  void pagesWalkEveryParkedKeyOldestFirstTiesByKey(TestDatabase db) {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), "paged-parking");
    MessageBalancer other = MessageBalancer.create(db.dataSource(), "paged-other");
    for (int i = 0; i < 12; i++) {
      b.storeMessage("key-" + i, "m".getBytes(StandardCharsets.UTF_8));
    }
    other.storeMessage("key-3", "m".getBytes(StandardCharsets.UTF_8));
    // Parked at three moments, three or four keys each (ties by key); key-0 and key-1 not parked.
    db.execute(
        "UPDATE balancer.partitions SET parked_at = timestamptz '2026-01-01 00:00:00.000001'"
            + " + (substring(partition_key from 5)::int % 3) * interval '1 second',"
            + " parked_reason = 'why ' || partition_key"
            + " WHERE partition_group IN ('paged-parking', 'paged-other')"
            + " AND partition_key NOT IN ('key-0', 'key-1')");

    List<ParkedKey> paged = new ArrayList<>();
    ParkedKey after = null;
    while (true) {
      List<ParkedKey> page = b.operations().parkedKeys(b.group(), after, 3);
      paged.addAll(page);
      if (page.size() < 3) {
        break;
      }
      after = page.get(page.size() - 1);
    }
    Map<String, String> all = b.operations().parkedKeys(b.group());
    assertThat(paged).extracting(ParkedKey::partitionKey).doesNotHaveDuplicates().hasSize(10);
    assertThat(paged)
        .extracting(ParkedKey::partitionKey)
        .containsExactlyInAnyOrderElementsOf(all.keySet());
    assertThat(paged)
        .extracting(ParkedKey::partitionKey)
        .startsWith("key-3", "key-6", "key-9", "key-10", "key-4");
    assertThat(paged).allMatch(k -> k.reason().equals("why " + k.partitionKey()));
    assertThat(paged.get(0).parkedAt().getNano()).isEqualTo(1_000);
    assertThat(other.operations().parkedKeys(other.group(), null, 10))
        .extracting(ParkedKey::partitionKey)
        .containsExactly("key-3");
  }

  @Test
  void aLimitOutOfRangeIsRefused(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "paged-bad");
    assertThatThrownBy(() -> b.operations().parkedKeys(b.group(), null, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () ->
                b.operations().parkedKeys(b.group(), null, BalancerOperations.MAX_PARKED_PAGE + 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(b.operations().parkedKeys(b.group(), null, 1)).isEmpty();
  }
}
