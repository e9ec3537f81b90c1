package org.messagepump.cli;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessagePump;
import org.messagepump.core.MessageTypes;

/** Command queue figures: drain (plain and batched), enqueue, backlog, latency, heap. */
final class BenchCommands {

  /** The benchmark's command: carries the JVM's nanoTime at enqueue for the latency figure. */
  record Noop(long sentNanos) {}

  static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(MessageTypes.builder().register(Noop.class, "bench.Noop").build());

  private final DataSource ds;
  private final CommandQueue queue;

  BenchCommands(DataSource ds) {
    this.ds = ds;
    this.queue = CommandQueue.create(ds, CODEC);
  }

  void clear() throws Exception {
    sql("TRUNCATE commandqueue.commands");
  }

  /**
   * Enqueues {@code n} no-op commands in batches of 1,000 (one round trip each), then analyzes the
   * table as autovacuum would (the baseline's table is analyzed too, so both are planned alike).
   */
  void fill(int n) throws Exception {
    List<NewCommand> batch = new ArrayList<>(1_000);
    for (int i = 0; i < n; i++) {
      batch.add(NewCommand.of(new Noop(0)));
      if (batch.size() == 1_000 || i == n - 1) {
        queue.enqueueAll(batch);
        batch.clear();
      }
    }
    sql("ANALYZE commandqueue.commands");
  }

  /** Fills a large backlog directly in SQL (the enqueue path is measured separately). */
  void fillFast(int n) throws Exception {
    for (int done = 0; done < n; done += 200_000) {
      int chunk = Math.min(200_000, n - done);
      sql(
          "INSERT INTO commandqueue.commands (message_id, message_type, payload)"
              + " SELECT gen_random_uuid(), 'bench.Noop', convert_to('{\"sentNanos\":0}', 'UTF8')"
              + " FROM generate_series(1, "
              + chunk
              + ")");
    }
    sql("ANALYZE commandqueue.commands");
  }

  /** Drains until {@code n} commands are handled; returns deliveries per second. */
  double drain(int workers, int batchSize, int n) throws InterruptedException {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    CommandHandlers handlers = CommandHandlers.builder().on(Noop.class, (c, ctx) -> {}).build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bench-drain")
            .driver(queue.driver(handlers))
            .workers(workers)
            .batchSize(batchSize)
            .pollInterval(Duration.ofMillis(20))
            .meterRegistry(registry)
            .build()) {
      Counter handled = registry.get("messagepump.deliveries").tag("outcome", "handled").counter();
      long start = System.nanoTime();
      pump.start();
      while (handled.count() < n) {
        Thread.sleep(5);
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  /** Enqueues {@code n} commands one by one (each its own transaction); per second. */
  double enqueueSingle(int n) {
    long start = System.nanoTime();
    for (int i = 0; i < n; i++) {
      queue.enqueue(new Noop(0));
    }
    return n / ((System.nanoTime() - start) / 1e9);
  }

  /** Enqueues {@code n} commands in batches of {@code size}; commands per second. */
  double enqueueBatch(int n, int size) {
    List<NewCommand> batch = new ArrayList<>(size);
    long start = System.nanoTime();
    for (int i = 0; i < n; i++) {
      batch.add(NewCommand.of(new Noop(0)));
      if (batch.size() == size || i == n - 1) {
        queue.enqueueAll(batch);
        batch.clear();
      }
    }
    return n / ((System.nanoTime() - start) / 1e9);
  }

  /**
   * Enqueue→handle latency at about {@code perSecond} commands a second; returns {p50, p99} in
   * milliseconds. With {@code notifications} off the idle pump finds work only at its next poll.
   */
  double[] latency(int n, int perSecond, boolean notifications, Duration pollInterval)
      throws InterruptedException {
    ConcurrentLinkedQueue<Long> samples = new ConcurrentLinkedQueue<>();
    CountDownLatch all = new CountDownLatch(n);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Noop.class,
                (c, ctx) -> {
                  samples.add(System.nanoTime() - c.sentNanos());
                  all.countDown();
                })
            .build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bench-latency")
            .driver(queue.driver(handlers))
            .workers(2)
            .pollInterval(pollInterval)
            .notifications(notifications)
            .build()) {
      pump.start();
      Thread.sleep(300); // let the first empty poll pass and the listener start
      long interval = TimeUnit.SECONDS.toNanos(1) / perSecond;
      long next = System.nanoTime();
      for (int i = 0; i < n; i++) {
        long wait = next - System.nanoTime();
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        queue.enqueue(new Noop(System.nanoTime()));
        next += interval;
      }
      if (!all.await(2, TimeUnit.MINUTES)) {
        throw new IllegalStateException("latency run did not finish");
      }
    }
    long[] sorted = samples.stream().mapToLong(Long::longValue).sorted().toArray();
    return new double[] {percentile(sorted, 0.50), percentile(sorted, 0.99)};
  }

  /** Used heap (MiB) of this process while a pump works on {@code queued} commands. */
  double heapWhileDraining(int queued) throws Exception {
    clear();
    if (queued > 0) {
      fillFast(queued);
    }
    CommandHandlers handlers = CommandHandlers.builder().on(Noop.class, (c, ctx) -> {}).build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bench-heap")
            .driver(queue.driver(handlers))
            .workers(4)
            .build()) {
      pump.start();
      Thread.sleep(3_000);
      return usedHeapMiB();
    } finally {
      clear();
    }
  }

  static double usedHeapMiB() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    long best = Long.MAX_VALUE;
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(100);
      best = Math.min(best, rt.totalMemory() - rt.freeMemory());
    }
    return best / (1024.0 * 1024.0);
  }

  private static double percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int i = (int) Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1);
    return sorted[Math.max(0, i)] / 1e6;
  }

  private void sql(String statement) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
