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
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;

/** Command queue figures: drain (plain and batched), enqueue, backlog, latency, heap. */
final class BenchCommands {

  /** The benchmark's command: carries the JVM's nanoTime at enqueue for the latency figure. */
  record Noop(long sentNanos) {}

  static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(MessageTypes.builder().register(Noop.class, "bench.Noop").build());

  private final DataSource ds;
  private final CommandQueue queue;
  private final CommandQueue withHistory;

  BenchCommands(DataSource ds) {
    this.ds = ds;
    this.queue = CommandQueue.create(ds, CODEC);
    this.withHistory = CommandQueue.builder(ds).codec(CODEC).history(true).build();
  }

  void clear() throws Exception {
    sql("TRUNCATE commandqueue.commands, commandqueue.command_history");
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
    return drain(workers, batchSize, n, null);
  }

  /**
   * The lease of the lease-mode drain: long enough that no heartbeat falls inside a no-op handler,
   * so the figure is the claim and the completion alone.
   */
  static final Duration DRAIN_LEASE = Duration.ofSeconds(30);

  /**
   * As {@link #drain(int, int, int)}, in lease mode when {@code lease} is not null: each batch
   * claimed with a lease in a transaction of its own, each command's completion in another.
   */
  double drain(int workers, int batchSize, int n, Duration lease) throws InterruptedException {
    return drain(queue, workers, batchSize, n, lease);
  }

  /**
   * As {@link #drain(int, int, int)}, the queue keeping a history: one more insert per batch, in
   * the handling transaction.
   */
  double drainWithHistory(int workers, int batchSize, int n) throws InterruptedException {
    return drain(withHistory, workers, batchSize, n, null);
  }

  private double drain(CommandQueue queue, int workers, int batchSize, int n, Duration lease)
      throws InterruptedException {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    CommandHandlers handlers = CommandHandlers.builder().on(Noop.class, (c, ctx) -> {}).build();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bench-drain")
            .driver(
                lease == null
                    ? queue.driver(handlers)
                    : queue.driver(handlers, CommandDriverOptions.defaults().withLease(lease)))
            .workers(workers)
            .batchSize(batchSize)
            .pollInterval(Duration.ofMillis(20))
            .meterRegistry(registry)
            .build()) {
      long start = System.nanoTime();
      pump.start();
      while (handled(registry) < n) {
        Thread.sleep(5);
      }
      return n / ((System.nanoTime() - start) / 1e9);
    }
  }

  /**
   * Lease mode's heartbeats while {@code running} handlers run at once for {@code window}: the
   * heartbeat transactions of the pump and the leases they extended, counted by the pump's meters
   * {@code messagepump.leases.heartbeats} and {@code messagepump.leases.extended}.
   *
   * @param beats heartbeat transactions in the window
   * @param extended leases extended in the window (one per running delivery per beat)
   * @param seconds the window's measured length
   */
  record Heartbeats(double beats, double extended, double seconds) {
    /** Heartbeat transactions per minute. */
    double beatsPerMinute() {
      return beats * 60 / seconds;
    }

    /** Leases extended per minute. */
    double extendedPerMinute() {
      return extended * 60 / seconds;
    }
  }

  /**
   * Runs {@code running} commands at once in a leased pump ({@code running} workers, {@code
   * batchSize} 1) whose handlers wait until the window is over; counts the heartbeats of the {@code
   * window} that starts once every handler runs, then lets them finish and drains them.
   */
  Heartbeats heartbeats(int running, Duration lease, Duration window) throws Exception {
    clear();
    List<NewCommand> batch = new ArrayList<>(running);
    for (int i = 0; i < running; i++) {
      batch.add(NewCommand.of(new Noop(0)));
    }
    queue.enqueueAll(batch);
    CountDownLatch started = new CountDownLatch(running);
    CountDownLatch release = new CountDownLatch(1);
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Noop.class,
                (c, ctx) -> {
                  started.countDown();
                  if (!release.await(10, TimeUnit.MINUTES)) {
                    throw new IllegalStateException("the heartbeat window did not end");
                  }
                })
            .build();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bench-lease")
            .driver(queue.driver(handlers, CommandDriverOptions.defaults().withLease(lease)))
            .workers(running)
            .batchSize(1)
            .pollInterval(Duration.ofMillis(20))
            .meterRegistry(registry)
            .build()) {
      pump.start();
      try {
        if (!started.await(2, TimeUnit.MINUTES)) {
          throw new IllegalStateException(
              (running - started.getCount()) + " of " + running + " handlers started");
        }
        Counter beats = registry.get("messagepump.leases.heartbeats").counter();
        Counter extended = registry.get("messagepump.leases.extended").counter();
        // From one beat to the first beat after the window: whole beat periods, so that the
        // figure is not rounded to the beats a fixed window happens to hold (4 or 5 in 5 s).
        long t0 = nextBeat(beats, lease);
        double b0 = beats.count();
        double e0 = extended.count();
        TimeUnit.NANOSECONDS.sleep(window.toNanos());
        long t1 = nextBeat(beats, lease);
        double b1 = beats.count();
        double e1 = extended.count();
        double seconds = (t1 - t0) / 1e9;
        release.countDown();
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (handled(registry) < running) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(
                handled(registry) + " of " + running + " leased commands completed");
          }
          Thread.sleep(5);
        }
        return new Heartbeats(b1 - b0, e1 - e0, seconds);
      } finally {
        release.countDown();
      }
    }
  }

  /**
   * Waits for the heartbeat counter to move and returns when it did ({@link System#nanoTime}),
   * polling every 2 ms; then waits 100 ms so that the beat has counted its extended leases too (the
   * beat increments both counters one after the other; the next beat is a third of the lease
   * later). Throws when no beat comes within ten beat periods.
   */
  private static long nextBeat(Counter beats, Duration lease) throws InterruptedException {
    double before = beats.count();
    long deadline = System.nanoTime() + lease.dividedBy(3).multipliedBy(10).toNanos();
    while (beats.count() == before) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("no lease heartbeat within ten beat periods");
      }
      Thread.sleep(2);
    }
    long at = System.nanoTime();
    Thread.sleep(100);
    return at;
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

  /**
   * Enqueue → handler start of a command of the highest priority while a pump of {@code workers}
   * workers ({@code batchSize} 1) drains a backlog of {@code queued} commands of the default
   * priority, bulk-inserted with SQL: {@code samples} such commands, each enqueued once the pump
   * has handled some of the backlog and the previous one has started. Returns the times in ms,
   * sorted.
   */
  double[] priorityLatency(int queued, int workers, int samples) throws Exception {
    clear();
    fillFast(queued);
    java.util.concurrent.BlockingQueue<Long> started =
        new java.util.concurrent.LinkedBlockingQueue<>();
    java.util.concurrent.atomic.AtomicLong backlogHandled =
        new java.util.concurrent.atomic.AtomicLong();
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Noop.class,
                (c, ctx) -> {
                  if (c.sentNanos() == 0) {
                    backlogHandled.incrementAndGet();
                  } else {
                    started.add(System.nanoTime() - c.sentNanos());
                  }
                })
            .build();
    EnqueueOptions urgent = EnqueueOptions.defaults().withPriority(EnqueueOptions.MAX_PRIORITY);
    double[] ms = new double[samples];
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("bench-priority")
            .driver(queue.driver(handlers))
            .workers(workers)
            .pollInterval(Duration.ofMillis(20))
            .build()) {
      pump.start();
      // The pump is busy with the backlog before the first sample: every worker claims again as
      // soon as it is done, so the urgent command meets claims in flight, as it would in use.
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
      while (backlogHandled.get() < Math.min(100, queued / 10)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the backlog's drain did not start");
        }
        Thread.sleep(5);
      }
      for (int i = 0; i < samples; i++) {
        queue.enqueue(new Noop(System.nanoTime()), urgent);
        Long nanos = started.poll(2, TimeUnit.MINUTES);
        if (nanos == null) {
          throw new IllegalStateException("a command of priority 9 did not start within 2 min");
        }
        ms[i] = nanos / 1e6;
      }
    } finally {
      clear();
    }
    java.util.Arrays.sort(ms);
    return ms;
  }

  /**
   * Used heap (MiB) of this process after a pump has worked on {@code queued} commands for {@code
   * working}.
   */
  double heapWhileDraining(int queued, Duration working) throws Exception {
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
      TimeUnit.NANOSECONDS.sleep(working.toNanos());
      return usedHeapMiB();
    } finally {
      clear();
    }
  }

  /** Deliveries handled by the pumps of {@code registry}, every message type's. */
  static double handled(io.micrometer.core.instrument.MeterRegistry registry) {
    return registry.find("messagepump.deliveries").tag("outcome", "handled").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
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
