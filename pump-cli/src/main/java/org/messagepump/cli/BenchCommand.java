package org.messagepump.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pump bench}: every driver measured against a raw-SQL ceiling in one run on one server,
 * with default durability. Figures are reported, never asserted.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = {
      "Measure every driver against a plain SKIP LOCKED loop.",
      "The loop is the ceiling for one transaction per delivery; both run in one run, on the"
          + " embedded PostgreSQL with fsync and synchronous_commit on (or on --jdbc-url)."
    })
final class BenchCommand implements Callable<Integer> {

  @Mixin DatabaseOptions db;

  @Option(names = "--quick", description = "Reduced sizes (about 2.5 minutes).")
  boolean quick;

  @Option(
      names = "--scale",
      defaultValue = "1",
      hidden = true,
      description = "Multiply every size (for tests).")
  double scale;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the figures as JSON.")
  Path json;

  @Option(
      names = "--only",
      split = ",",
      paramLabel = "DRIVER",
      description = "Only these drivers: ${COMPLETION-CANDIDATES} (comma-separated; default: all).")
  java.util.Set<DriverName> only;

  @Spec CommandSpec spec;

  private final Map<Integer, Double> baselines = new HashMap<>();
  private BenchReport report;

  /** The JVM the baseline runs in (see {@link BaselineProcess} for why not this one). */
  private BaselineProcess baselineProcess;

  @Override
  public Integer call() throws Exception {
    if (scale <= 0 || scale > 10) {
      throw new CliException("--scale must be in (0, 10]: " + scale, 2);
    }
    CpuMeter.smokeRun(smoke());
    PrintWriter out = spec.commandLine().getOut();
    Map<String, String> durable = Map.of("fsync", "on", "synchronous_commit", "on");
    try (Database database = Database.open(db, true, 40, spec.commandLine().getErr(), durable);
        BaselineProcess baselineJvm = BaselineProcess.start(database.pool(), smoke())) {
      DataSource ds = database.dataSource();
      baselineProcess = baselineJvm;
      MigrateCommand.migrateAll(ds);
      if (!smoke()) {
        CpuMeter.warmUp();
      }
      report = new BenchReport(out);
      out.printf("bench on %s%s%n", database.description(), quick ? " (quick)" : "");
      // Each part measures its own baselines, next to the figures they divide: on a shared
      // two-core machine the same baseline measured minutes apart varied by half.
      if (only == null || only.contains(DriverName.commands)) {
        baselines.clear();
        commands(ds);
      }
      if (only == null || only.contains(DriverName.events)) {
        baselines.clear();
        events(ds);
      }
      if (only == null || only.contains(DriverName.balancer)) {
        baselines.clear();
        balancer(ds);
      }
      out.println();
      report.printTable();
      if (json != null) {
        report.writeJson(json);
        out.println("wrote " + json);
      }
    }
    return 0;
  }

  private int size(int full, int reduced) {
    return (int) Math.max(10, Math.round((quick ? reduced : full) * scale));
  }

  private double baseline(int workers, int rows) {
    Double b = baselines.get(workers);
    if (b == null) {
      Timed<Double> run = timedBaseline(workers, rows);
      reportBaseline(workers, rows, run);
      b = run.result();
    }
    return b;
  }

  /**
   * Makes {@code run} the baseline of {@code workers} for the part's other rows, and reports it
   * with its CPU rows.
   */
  private void reportBaseline(int workers, int rows, Timed<Double> run) {
    baselines.put(workers, run.result());
    Map<String, Object> p = params("workers", workers, "rows", rows);
    report.add("baseline.skiplocked", p, run.result(), "deliveries/s", null);
    cpu("baseline.skiplocked", p, run.cpuMicros());
  }

  /**
   * A run's result and the CPU per delivery it cost (client, server, JIT; see {@link CpuMeter}).
   */
  private record Timed<T>(T result, double[] cpuMicros) {}

  /** Runs {@code run} of {@code deliveries} deliveries once the JIT is quiet, measuring its CPU. */
  private static <T> Timed<T> timed(long deliveries, Run<T> run) throws Exception {
    CpuMeter.Reading cpu = CpuMeter.startTimedRow();
    T result = run.run();
    return new Timed<>(result, cpu.perDeliveryMicrosUntil(CpuMeter.now(), deliveries));
  }

  /**
   * A timed baseline run of {@code workers} connections over {@code rows} rows, in the baseline's
   * own JVM, with that JVM's CPU as the client's.
   */
  private Timed<Double> timedBaseline(int workers, int rows) {
    double[] run = baselineProcess.run(workers, rows, true);
    return new Timed<>(run[0], new double[] {run[1], run[2], run[3]});
  }

  /** An untimed baseline run (a warm-up round's), in the baseline's own JVM. */
  private void untimedBaseline(int workers, int rows) {
    baselineProcess.run(workers, rows, false);
  }

  /** One timed run of the thing a target row measures. */
  @FunctionalInterface
  private interface Run<T> {
    T run() throws Exception;
  }

  /** A subject run, its rate, and the baseline run made just before it. */
  private record Pair<T>(Timed<Double> baseline, Timed<T> subject, double rate) {
    double ratio() {
      return rate / baseline.result();
    }

    T result() {
      return subject.result();
    }
  }

  /**
   * Consecutive messages of one key per batch in the balancer's run drain (messagesPerTurn): half
   * the batch of 10, so a batch holds two keys.
   */
  private static final int RUN = 5;

  /**
   * How many pairs a target row measures: 3 with --quick, where one run is a second or two; one in
   * a smoke run (below {@code --scale} 0.1), whose runs are too small for a median to mean more
   * than one of them.
   */
  private int pairs() {
    return quick && !smoke() ? 3 : 1;
  }

  /**
   * Measures a target row as {@link #pairs()} pairs, each a baseline run of {@code workers} workers
   * over {@code rows} rows and then {@code subject} ({@code prepare} first, untimed), after one
   * untimed {@code prepare} and {@code subject} (not in a smoke run), and returns the pairs sorted
   * by ratio; the row reports the median pair, and its {@code ratios} parameter the lowest, median
   * and highest. One --quick run of either side moved by about ±0.15 between runs on a shared
   * two-core machine; a ratio of two runs made back to back, and the median of three such, drifts
   * much less than a ratio of runs minutes apart. The median pair's baseline becomes the baseline
   * of {@code workers} for the part's other rows.
   */
  private <T> List<Pair<T>> paired(
      int workers,
      int rows,
      long deliveries,
      Run<?> prepare,
      Run<T> subject,
      java.util.function.ToDoubleFunction<T> rate)
      throws Exception {
    List<Pair<T>> pairs = new java.util.ArrayList<>();
    if (!smoke()) {
      // One untimed run of the row's own workload first. The part's warm-up runs every workload in
      // turn, and a branch that one workload takes and the one compiled before it never did (a
      // run of several messages of a key after batches of one) makes the JIT drop that method
      // and compile it again; measured on the balancer's acquisition, that recompilation (about a
      // second of one core) fell inside the timed drain after the warm-up in 13 of 21 runs (38 to
      // 112 us of compilation per delivery, where 1 to 10 is usual). Run here, it is over before
      // the timed pairs, which wait for a quiet JIT.
      prepare.run();
      subject.run();
    }
    for (int i = 0; i < pairs(); i++) {
      Timed<Double> base = timedBaseline(workers, rows);
      prepare.run();
      Timed<T> run = timed(deliveries, subject);
      pairs.add(new Pair<>(base, run, rate.applyAsDouble(run.result())));
    }
    pairs.sort(java.util.Comparator.comparingDouble(Pair::ratio));
    if (!baselines.containsKey(workers)) {
      reportBaseline(workers, rows, pairs.get(pairs.size() / 2).baseline());
    }
    return pairs;
  }

  /**
   * Reports the median pair of {@code pairs} as row {@code name} (its {@code ratios} parameter:
   * lowest / median / highest, when there are several) with its CPU rows; returns the median pair.
   */
  private <T> Pair<T> reportPaired(String name, Map<String, Object> p, List<Pair<T>> pairs) {
    Pair<T> median = pairs.get(pairs.size() / 2);
    Map<String, Object> q = new LinkedHashMap<>(p);
    if (pairs.size() > 1) {
      q.put(
          "ratios",
          String.format(
              java.util.Locale.ROOT,
              "%.2f/%.2f/%.2f",
              pairs.get(0).ratio(),
              median.ratio(),
              pairs.get(pairs.size() - 1).ratio()));
    }
    report.add(name, q, median.rate(), "deliveries/s", median.ratio());
    cpu(name, p, median.subject().cpuMicros());
    return median;
  }

  /** Deliveries of each workload in one round of the untimed warm-up ({@link #warmUp}). */
  private int warmUpSize() {
    return size(10_000, 10_000);
  }

  /**
   * The untimed warm-up before a part's timed rows, so that no timed figure includes the JIT
   * compiling: {@code round} (each of the part's workloads once, its baseline included, {@link
   * #warmUpSize} deliveries each) is run at least twice, then again until a round during which the
   * JIT compiled for less than {@value #SETTLED_JIT_SHARE} of its time, at most {@link
   * #maxWarmUpRounds} rounds. A fixed warm-up did not settle on a two-core machine: with 20,000
   * deliveries the JIT still compiled the balancer's delivery path at tier 4 during the first timed
   * drain (compiler time 92 us per delivery against 1 for the baseline beside it), because the
   * tier-4 thresholds grow with the compiler's queue on a busy machine. The plain JDBC baseline
   * settles in the first round; the pump, with far more code, later. Reported as a row {@code
   * warmup} (the rounds taken and the JIT's share of each round, in percent).
   */
  private void warmUp(String part, Run<?> round) throws Exception {
    List<String> shares = new java.util.ArrayList<>();
    double share;
    do {
      CpuMeter.Reading before = CpuMeter.startTimedRow();
      long start = System.nanoTime();
      round.run();
      long wall = System.nanoTime() - start;
      long jit = CpuMeter.now().jitNanos() - before.jitNanos();
      share = before.jitNanos() < 0 ? 0 : (double) jit / wall;
      shares.add(String.format(java.util.Locale.ROOT, "%.1f", share * 100));
    } while (shares.size() < maxWarmUpRounds()
        && (shares.size() < 2 || share >= SETTLED_JIT_SHARE));
    report.add(
        "warmup",
        params("part", part, "rounds", shares.size(), "jitPercent", String.join("/", shares)),
        share * 100,
        "% jit",
        null);
  }

  /** The JIT's share of a warm-up round's time below which the JIT counts as settled. */
  private static final double SETTLED_JIT_SHARE = 0.02;

  /**
   * Twelve rounds at most; one below {@code --scale} 0.1, a smoke run whose rounds are too small
   * for the JIT to settle in and whose figures mean nothing (the build's test of the command). With
   * six, the balancer's warm-up ended unsettled in every one of 16 --quick runs on a two-core
   * machine (the last round 2.5-27% JIT): the acquisition, a large method, is compiled again after
   * each deoptimization on a branch first taken late (a key raced by another worker), which took
   * 0.4-3 s of a compiler thread each time; with twelve, 9 of 10 runs settled, after 6-12 rounds.
   */
  private int maxWarmUpRounds() {
    return smoke() ? 1 : 12;
  }

  /** Below {@code --scale} 0.1: the build's test of the command, whose figures mean nothing. */
  private boolean smoke() {
    return scale < 0.1;
  }

  private void commands(DataSource ds) throws Exception {
    BenchCommands c = new BenchCommands(ds);
    int n = size(50_000, 5_000);
    c.clear();
    int w = warmUpSize();
    warmUp(
        "commands",
        () -> {
          untimedBaseline(8, w);
          c.clear();
          c.fill(w);
          c.drain(8, 1, w);
          c.fill(w);
          c.drain(8, 10, w);
          // Lease mode has a claim, a completion and a runner of its own to compile: with a
          // quarter of a round, the JIT still compiled for 1.7 ms per delivery of the timed row.
          c.fill(w);
          return c.drain(8, 1, w, BenchCommands.DRAIN_LEASE);
        });
    for (int workers : new int[] {1, 4, 8}) {
      double base = baseline(workers, n);
      // A fresh table, as the baseline's is: the warm-up's 40,000 deletes leave dead index entries
      // at the head of the claim's index until autovacuum, which every claim then steps over.
      c.clear();
      c.fill(n);
      CpuMeter.Reading cpu = CpuMeter.startTimedRow();
      double rate = c.drain(workers, 1, n);
      Map<String, Object> p = params("workers", workers, "commands", n);
      report.add("commands.drain", p, rate, "deliveries/s", rate / base);
      cpu("commands.drain", p, cpu, n);
    }
    // The history of handled commands: one more insert per batch, in the handling transaction.
    {
      c.clear();
      c.fill(n);
      CpuMeter.Reading cpu = CpuMeter.startTimedRow();
      double rate = c.drainWithHistory(8, 1, n);
      Map<String, Object> p = params("workers", 8, "commands", n);
      report.add("commands.drain.history", p, rate, "deliveries/s", rate / baseline(8, n));
      cpu("commands.drain.history", p, cpu, n);
    }
    // Batches drain at 30,000 to 70,000 commands/s: 5,000 of them would last 70 to 170 ms, less
    // than one burst of the JIT (40 to 50 us of compilation per delivery was measured in such a
    // row), so the batch rows drain as many as the balancer's batch rows do. In pairs: against
    // the 8-worker baseline measured once, minutes earlier, the ratio of batches of 50 moved by
    // 20% between runs whose rates were within 2%.
    int nb = size(50_000, 25_000);
    for (int batch : new int[] {10, 50}) {
      List<Pair<Double>> pairs =
          paired(
              8,
              n,
              nb,
              () -> {
                c.clear();
                c.fill(nb);
                return null;
              },
              () -> c.drain(8, batch, nb),
              r -> r);
      reportPaired(
          "commands.drain.batch", params("workers", 8, "batchSize", batch, "commands", nb), pairs);
    }
    leases(c, n);
    int m = size(5_000, 1_000);
    report.add("enqueue.single", params("commands", m), c.enqueueSingle(m), "commands/s", null);
    report.add(
        "enqueue.batch",
        params("commands", n, "batch", 100),
        c.enqueueBatch(n, 100),
        "commands/s",
        null);
    c.clear();

    int small = size(10_000, 5_000);
    int big = size(1_000_000, 100_000);
    c.fill(small);
    double smallRate = c.drain(4, 1, small);
    c.fillFast(big);
    double bigRate = c.drain(4, 1, small);
    c.clear();
    report.add(
        "commands.backlog",
        params("workers", 4, "queued", big, "vs", small, "drained", small),
        bigRate,
        "deliveries/s",
        bigRate / smallRate);

    int samples = size(1_000, 300);
    double[] polling = c.latency(samples, 100, false, Duration.ofSeconds(1));
    double[] notified = c.latency(samples, 100, true, Duration.ofSeconds(1));
    report.add(
        "latency.polling",
        params("rate", "100/s", "pollInterval", "1s", "percentile", 50),
        polling[0],
        "ms",
        null);
    report.add(
        "latency.polling",
        params("rate", "100/s", "pollInterval", "1s", "percentile", 99),
        polling[1],
        "ms",
        null);
    report.add(
        "latency.notify",
        params("rate", "100/s", "pollInterval", "1s", "percentile", 50),
        notified[0],
        "ms",
        null);
    report.add(
        "latency.notify",
        params("rate", "100/s", "pollInterval", "1s", "percentile", 99),
        notified[1],
        "ms",
        null);

    int behind = size(100_000, 100_000);
    double[] urgent = c.priorityLatency(behind, 4, 5);
    report.add(
        "latency.priority",
        params(
            "workers",
            4,
            "queued",
            behind,
            "priority",
            "9 behind 0",
            "samples",
            urgent.length,
            "max",
            String.format(java.util.Locale.ROOT, "%.1fms", urgent[urgent.length - 1])),
        urgent[urgent.length / 2],
        "ms",
        null);

    // The pump works for 3 s before the heap is read; half a second in a smoke run.
    Duration working = Duration.ofMillis(smoke() ? 500 : 3_000);
    double empty = c.heapWhileDraining(0, working);
    double full = c.heapWhileDraining(big, working);
    report.add("heap", params("queued", 0), empty, "MiB", null);
    report.add("heap", params("queued", big), full, "MiB", null);
    report.add("heap.delta", params("queued", big), full - empty, "MiB", null);
  }

  /**
   * The lease of the heartbeat rows: 3 s, a beat every second (a third of it); the shortest lease,
   * 1 s, in a smoke run, so that its windows of whole beat periods stay short.
   */
  private Duration heartbeatLease() {
    return Duration.ofSeconds(smoke() ? 1 : 3);
  }

  /** Handlers running at once in the heartbeat rows. */
  private static final int[] RUNNING = {1, 10, 50};

  /**
   * Lease mode: the drain of no-op commands (8 workers, batches of 1 and 10) against the 8-worker
   * baseline, then the heartbeat rows: 1, 10 and 50 handlers running at once for a window (30 s, 5
   * s with --quick, at least 3 s), the heartbeat transactions of the pump per minute, per running
   * delivery, and the leases extended per minute per running delivery.
   */
  private void leases(BenchCommands c, int n) throws Exception {
    for (int batch : new int[] {1, 10}) {
      c.clear();
      c.fill(n);
      CpuMeter.Reading cpu = CpuMeter.startTimedRow();
      double rate = c.drain(8, batch, n, BenchCommands.DRAIN_LEASE);
      Map<String, Object> p =
          params(
              "workers",
              8,
              "batchSize",
              batch,
              "commands",
              n,
              "lease",
              BenchCommands.DRAIN_LEASE.toSeconds() + "s");
      report.add("commands.drain.leased", p, rate, "deliveries/s", rate / baseline(8, n));
      cpu("commands.drain.leased", p, cpu, n);
    }
    // At least three beat periods (1 s below --scale 1: three periods of the smoke run's 1 s lease,
    // one of a 3 s lease). The row counts from a beat to the first beat after the window, so it
    // always holds at least one beat.
    long windowMillis =
        Math.max(scale < 1 ? 1_000 : 3_000, Math.round((quick ? 5_000 : 30_000) * scale));
    Duration window = Duration.ofMillis(windowMillis);
    for (int running : RUNNING) {
      BenchCommands.Heartbeats h = c.heartbeats(running, heartbeatLease(), window);
      Map<String, Object> p =
          params(
              "running",
              running,
              "lease",
              heartbeatLease().toSeconds() + "s",
              "window",
              String.format(java.util.Locale.ROOT, "%.1fs", h.seconds()),
              "beats",
              (long) h.beats());
      report.add("commands.lease.heartbeats", p, h.beatsPerMinute(), "tx/min per pump", null);
      report.add(
          "commands.lease.heartbeats.per.delivery",
          p,
          h.beatsPerMinute() / running,
          "tx/min per running delivery",
          null);
      report.add(
          "commands.lease.extended.per.delivery",
          p,
          h.extendedPerMinute() / running,
          "extensions/min per running delivery",
          null);
    }
    c.clear();
  }

  private void events(DataSource ds) throws Exception {
    BenchEvents e = new BenchEvents(ds);
    int n = size(50_000, 5_000);
    e.clear();
    int w = warmUpSize();
    warmUp(
        "events",
        () -> {
          untimedBaseline(4, w);
          e.clear();
          long warm = e.fill(w, 16);
          e.catchUp(1, 4, 50, warm);
          return e.catchUp(1, 4, 1, warm);
        });
    e.clear();
    report.add(
        "events.append",
        params("writers", 4, "batch", 10, "events", n),
        e.append(4, n, 10),
        "events/s",
        null);
    e.clear();
    long appended = e.fill(n, 16);
    // Untimed: one more handler reads the same events first, so the timed catch-up starts with
    // the JIT's profile of exactly this work. Without it, the tier-4 code of the delivery path
    // was still being compiled (and deoptimized) during the --quick row: jit.compile 176-324 us
    // per delivery, against 14 in a full run (docs/benchmarks.md).
    e.catchUp(1, 4, 1, appended);
    // Each catch-up is a new handler reading the same events: nothing to prepare between pairs.
    List<Pair<Double>> ones =
        paired(4, n, appended, () -> null, () -> e.catchUp(1, 4, 1, appended), r -> r);
    Map<String, Object> p = params("handlers", 1, "workers", 4, "events", appended, "streams", 16);
    double one = reportPaired("events.catchup", p, ones).rate();
    // Four handlers read the same events, each its own pump of 2 workers: in pairs against the
    // baseline of 8 workers, like the one-handler row. Each run counts all four handlers'
    // deliveries.
    List<Pair<Double>> fours =
        paired(8, n, 4 * appended, () -> null, () -> e.catchUp(4, 2, 1, appended), r -> r);
    reportPaired(
        "events.catchup",
        params("handlers", 4, "workers", 2, "events", appended, "streams", 16),
        fours);
    // Batches of 50 read the 5,000 events of --quick in 0.10-0.16 s, the pump's start a large
    // part of it, so one run's figure moved by 8% from one run to the next: the batch row reads
    // five times as many with --quick, as the balancer's batch rows drain, in pairs.
    int nb = size(50_000, 25_000);
    e.clear();
    long many = e.fill(nb, 16);
    List<Pair<Double>> batches =
        paired(4, n, many, () -> null, () -> e.catchUp(1, 4, 50, many), r -> r);
    reportPaired(
        "events.catchup.batch",
        params("handlers", 1, "workers", 4, "batchSize", 50, "events", many),
        batches);
    manyStreams(e, n, one);
  }

  /**
   * Polls at {@code streams} streams (200,000; 20,000 with --quick): catch-up of {@code n} events
   * spread one per stream over that many streams, against the 16-stream catch-up rate {@code
   * sixteen} (the ratio), then the median empty poll of the caught-up handler.
   */
  private void manyStreams(BenchEvents e, int n, double sixteen) throws Exception {
    int streams = (int) Math.max(n, Math.round((quick ? 20_000 : 200_000) * scale));
    e.clear();
    long events = e.fillMany(streams, n);
    double rate = e.catchUp(1, 4, 1, events);
    report.add(
        "events.catchup",
        params("handlers", 1, "workers", 4, "events", events, "streams", streams, "vs", "16"),
        rate,
        "deliveries/s",
        rate / sixteen);
    report.add(
        "events.poll.idle",
        params("streams", streams, "percentile", 50),
        e.idlePoll(e.lastHandlerKey(1), 200),
        "ms",
        null);
    e.clear();
  }

  private void balancer(DataSource ds) throws Exception {
    BenchBalancer b = new BenchBalancer(ds);
    int n = size(50_000, 5_000);
    int keys = Math.max(10, Math.min(1_000, n / 50));
    int w = warmUpSize();
    warmUp(
        "balancer",
        () -> {
          untimedBaseline(8, w);
          b.clear();
          b.fill("bench-warm-up", w, keys, 1_000);
          b.drain("bench-warm-up", w, keys, 8, 1);
          b.fill("bench-warm-up-batch", w, keys, 100);
          b.drain("bench-warm-up-batch", w, keys, 8, 10);
          b.fill("bench-warm-up-runs", w, keys, 100);
          return b.drain("bench-warm-up-runs", w, keys, 8, 10, RUN);
        });
    List<Pair<BenchBalancer.Drain>> plain =
        paired(
            8,
            n,
            n,
            () -> {
              b.clear();
              return b.fill("bench", n, keys, 1_000);
            },
            () -> b.drain("bench", n, keys, 8, 1),
            BenchBalancer.Drain::perSecond);
    reportPaired("balancer.drain", params("workers", 8, "messages", n, "keys", keys), plain);
    drainChecks(1, 1, plain);
    // The batch drain takes as many messages as the batch-1 drain in a full run, five times as
    // many with --quick: with 5,000 it lasted 0.11-0.17 s, so the pump's start and the last
    // keys' tail were a large part of it, and the three pairs of one run spread from 2.6 to 4.7;
    // with 25,000 it lasts about as long as its baseline (docs/benchmarks.md).
    int nb = size(50_000, 25_000);
    // Each pair's drain takes the messages its fill stored: the fills are the store row.
    List<Double> stores = new java.util.ArrayList<>();
    batchDrain(b, n, nb, keys, 1, stores);
    stores.sort(null);
    report.add(
        "balancer.store.batch",
        params("messages", nb, "batchSize", 100, "keys", keys),
        stores.get(stores.size() / 2),
        "messages/s",
        null);
    // The same drain taking runs: up to RUN consecutive messages of one key per batch.
    batchDrain(b, n, nb, keys, RUN, new java.util.ArrayList<>());
  }

  /**
   * The {@code balancer.drain.batch} row (batches of 10) with up to {@code messagesPerTurn}
   * messages of a key per batch, measured in pairs, and its order and fairness rows; each pair's
   * fill rate is added to {@code stores}.
   */
  private void batchDrain(
      BenchBalancer b, int baselineRows, int nb, int keys, int messagesPerTurn, List<Double> stores)
      throws Exception {
    String group = messagesPerTurn == 1 ? "bench-batch" : "bench-runs";
    List<Pair<BenchBalancer.Drain>> pairs =
        paired(
            8,
            baselineRows,
            nb,
            () -> {
              b.clear();
              return stores.add(b.fill(group, nb, keys, 100));
            },
            () -> b.drain(group, nb, keys, 8, 10, messagesPerTurn),
            BenchBalancer.Drain::perSecond);
    Map<String, Object> p = params("workers", 8);
    p.putAll(batchParams(10, messagesPerTurn));
    p.putAll(params("messages", nb, "keys", keys));
    reportPaired("balancer.drain.batch", p, pairs);
    drainChecks(10, messagesPerTurn, pairs);
  }

  /**
   * The order and fairness rows of the drains of {@code pairs}: the order violations of all of them
   * together, and the lowest Jain's index of any.
   */
  private void drainChecks(
      int batchSize, int messagesPerTurn, List<Pair<BenchBalancer.Drain>> pairs) {
    Map<String, Object> p = batchParams(batchSize, messagesPerTurn);
    report.add(
        "balancer.order.violations",
        p,
        pairs.stream().mapToLong(d -> d.result().orderViolations()).sum(),
        "count",
        null);
    Map<String, Object> q = new LinkedHashMap<>(p);
    q.put("window", "first 10%");
    report.add(
        "balancer.fairness.jain",
        q,
        pairs.stream().mapToDouble(d -> d.result().jain()).min().orElseThrow(),
        "index",
        null);
  }

  /**
   * Adds the CPU time per delivery the row {@code of} cost this JVM ({@code cpu.client}) and the
   * local PostgreSQL processes ({@code cpu.server}); see {@link CpuMeter}.
   */
  private void cpu(String of, Map<String, Object> p, CpuMeter.Reading before, long deliveries) {
    cpu(of, p, before.perDeliveryMicrosUntil(CpuMeter.now(), deliveries));
  }

  /** As above, from CPU figures per delivery already taken. */
  private void cpu(String of, Map<String, Object> p, double[] micros) {
    Map<String, Object> q = new LinkedHashMap<>();
    q.put("of", of);
    q.putAll(p);
    if (micros[0] >= 0) {
      report.add("cpu.client", q, micros[0], "us/delivery", null);
    }
    if (micros[1] >= 0) {
      report.add("cpu.server", q, micros[1], "us/delivery", null);
    }
    if (micros[2] >= 0) {
      report.add("jit.compile", q, micros[2], "us/delivery", null);
    }
  }

  /** The batch size, and the messages per turn when a drain takes runs (above 1). */
  private static Map<String, Object> batchParams(int batchSize, int messagesPerTurn) {
    Map<String, Object> p = params("batchSize", batchSize);
    if (messagesPerTurn > 1) {
      p.put("messagesPerTurn", messagesPerTurn);
    }
    return p;
  }

  private static Map<String, Object> params(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }
}
