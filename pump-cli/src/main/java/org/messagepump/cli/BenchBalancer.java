package org.messagepump.cli;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerDriverOptions;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.NewMessage;
import org.messagepump.balancer.Result;
import org.messagepump.core.engine.MessagePump;

/** Balancer figures: drain rate, per-key order violations, fairness (Jain's index). */
final class BenchBalancer {

  /** The outcome of one drain. */
  record Drain(double perSecond, long orderViolations, double jain) {}

  private final DataSource ds;

  BenchBalancer(DataSource ds) {
    this.ds = ds;
  }

  /**
   * Empties the balancer's tables (a drain leaves them empty but full of dead rows until
   * autovacuum): each timed drain starts on fresh tables, as the baseline's does.
   */
  void clear() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("TRUNCATE balancer.messages, balancer.partitions");
    }
  }

  /**
   * Stores {@code n} messages over {@code keys} keys (message i → key i % keys) with {@link
   * MessageBalancer#storeMessages}, {@code batchSize} per call and transaction; messages per
   * second.
   */
  double fill(String group, int n, int keys, int batchSize) {
    MessageBalancer balancer = MessageBalancer.create(ds, group);
    List<NewMessage> batch = new ArrayList<>(batchSize);
    long start = System.nanoTime();
    for (int i = 0; i < n; i++) {
      batch.add(NewMessage.of("k" + (i % keys), ByteBuffer.allocate(8).putLong(i).array()));
      if (batch.size() == batchSize || i == n - 1) {
        balancer.storeMessages(batch);
        batch.clear();
      }
    }
    return n / ((System.nanoTime() - start) / 1e9);
  }

  /** Drains the group with {@code workers} workers; measures order and fairness on the way. */
  Drain drain(String group, int n, int keys, int workers, int batchSize)
      throws InterruptedException {
    return drain(group, n, keys, workers, batchSize, 1);
  }

  /**
   * As {@link #drain(String, int, int, int, int)}, with up to {@code messagesPerTurn} consecutive
   * messages of one key per batch.
   */
  Drain drain(String group, int n, int keys, int workers, int batchSize, int messagesPerTurn)
      throws InterruptedException {
    MessageBalancer balancer = MessageBalancer.create(ds, group);
    Map<String, Long> last = new ConcurrentHashMap<>();
    AtomicLong violations = new AtomicLong();
    AtomicInteger served = new AtomicInteger();
    int window = Math.max(1, n / 10);
    Map<String, Integer> firstWindow = new HashMap<>();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bench-balancer")
            .driver(
                balancer.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              long seq = ByteBuffer.wrap(m.content()).getLong();
                              Long before = last.put(m.partitionKey(), seq);
                              if (before != null && before > seq) {
                                violations.incrementAndGet();
                              }
                              if (served.getAndIncrement() < window) {
                                synchronized (firstWindow) {
                                  firstWindow.merge(m.partitionKey(), 1, Integer::sum);
                                }
                              }
                              return Result.ok();
                            })
                        .build(),
                    BalancerDriverOptions.defaults().withMessagesPerTurn(messagesPerTurn)))
            .workers(workers)
            .batchSize(batchSize)
            .pollInterval(Duration.ofMillis(20))
            .build()) {
      long start = System.nanoTime();
      pump.start();
      while (served.get() < n) {
        Thread.sleep(5);
      }
      while (balancer.operations().messageCount(balancer.group()) > 0) {
        Thread.sleep(5);
      }
      double rate = n / ((System.nanoTime() - start) / 1e9);
      return new Drain(rate, violations.get(), jain(firstWindow, keys));
    }
  }

  /** Jain's fairness index of the per-key served counts, over all {@code keys} keys. */
  static double jain(Map<String, Integer> counts, int keys) {
    double sum = 0;
    double squares = 0;
    for (int c : counts.values()) {
      sum += c;
      squares += (double) c * c;
    }
    return squares == 0 ? 0 : (sum * sum) / (keys * squares);
  }
}
