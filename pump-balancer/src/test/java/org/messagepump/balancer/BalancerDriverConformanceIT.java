package org.messagepump.balancer;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.conformance.DriverConformance;
import org.messagepump.core.BusyException;
import org.messagepump.core.spi.Driver;
import org.messagepump.testkit.TestDatabase;

/**
 * The driver conformance kit against the balancer's driver: a key is a partition key; it parks (a
 * key) and keeps each key's order. Each test gets a fresh group.
 */
class BalancerDriverConformanceIT extends DriverConformance {

  private static final AtomicInteger GROUPS = new AtomicInteger();

  private MessageBalancer balancer;

  @Override
  protected void prepare(TestDatabase db) {
    BalancerOperations.of(db.dataSource()).migrate();
    balancer = MessageBalancer.create(db.dataSource(), "conformance-" + GROUPS.incrementAndGet());
  }

  @Override
  protected Driver driver(TestDatabase db, Behaviour behaviour) {
    // The message comes first in every handler shape; the second argument is not needed.
    return balancer.driver(
        BalancedHandlers.builder()
            .on(
                (m, ignored) -> {
                  String id = Long.toString(m.id());
                  return switch (behaviour.decide(id, m.failures() + 1)) {
                    case HANDLE -> Result.ok();
                    case BUSY -> throw new BusyException("conformance: " + id + " is busy");
                    case FAIL -> throw new PlannedFailure(id);
                  };
                })
            .build());
  }

  @Override
  protected String produce(TestDatabase db, String key) {
    return Long.toString(balancer.storeMessage(key, key.getBytes(StandardCharsets.UTF_8)));
  }

  @Override
  protected long remaining(TestDatabase db) {
    return balancer.operations().messageCount(balancer.group()) - parked(db);
  }

  @Override
  protected long parked(TestDatabase db) {
    long parked = 0;
    for (String key : balancer.operations().parkedKeys(balancer.group()).keySet()) {
      parked +=
          balancer
              .operations()
              .partitionStats(balancer.group(), key)
              .map(PartitionStats::messageCount)
              .orElse(0L);
    }
    return parked;
  }

  @Override
  protected boolean parks() {
    return true;
  }

  @Override
  protected boolean orderedPerKey() {
    return true;
  }
}
