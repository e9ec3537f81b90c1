package org.messagepump.cli;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time spent by this JVM (the client) and by the machine's local PostgreSQL processes (the
 * server) between two readings. On a machine whose cores are saturated, a drain's rate is set by
 * the CPU time a delivery costs both sides, so these two figures explain a ratio that the wall
 * clock only shows: they vary far less from run to run than the rates do.
 *
 * <p>The server side is read from {@code /proc} (every process named {@code postgres}, so a server
 * given with {@code --jdbc-url} on another machine counts as 0, and other local PostgreSQL servers
 * count too); {@code /proc} gives 10 ms ticks, enough over a drain of a second or more. Both read
 * as -1 where the platform does not offer them.
 */
final class CpuMeter {

  /**
   * CPU nanoseconds of the client and of the server at one moment, and the JIT's total compilation
   * time ({@code CompilationMXBean}: elapsed time summed over the compiler threads, not CPU time;
   * on a loaded machine it includes their waiting).
   */
  record Reading(long clientNanos, long serverNanos, long jitNanos) {

    /** Microseconds per delivery since {@code this}: {client CPU, server CPU, JIT compilation}. */
    double[] perDeliveryMicrosUntil(Reading later, long deliveries) {
      return new double[] {
        per(later.clientNanos - clientNanos, clientNanos, deliveries),
        per(later.serverNanos - serverNanos, serverNanos, deliveries),
        per(later.jitNanos - jitNanos, jitNanos, deliveries)
      };
    }

    private static double per(long nanos, long start, long deliveries) {
      return start < 0 || deliveries <= 0 ? -1 : nanos / 1_000.0 / deliveries;
    }
  }

  private static final long NANOS_PER_TICK = 10_000_000L; // USER_HZ is 100 on Linux

  private CpuMeter() {}

  static Reading now() {
    return new Reading(clientNanos(), serverNanos(), jitNanos());
  }

  /**
   * Reads the meter {@value #WARM_UP_READINGS} times, so that the JIT compiles its own code (a read
   * and a parse of {@code /proc/<pid>/stat} for every process) before the first timed row. Read
   * only twice per row, that code reached the compiler's thresholds during the timed rows, and its
   * compilation ran beside the row being timed: JFR showed {@code FileChannelImpl.read} compiled
   * for 180 ms inside a timed {@code balancer.drain}, 47 us of compilation per delivery.
   */
  static void warmUp() {
    for (int i = 0; i < WARM_UP_READINGS; i++) {
      now();
    }
  }

  private static final int WARM_UP_READINGS = 300;

  /** The start of a timed row: once the JIT is quiet ({@link #awaitQuietJit}), the reading. */
  static Reading startTimedRow() throws InterruptedException {
    awaitQuietJit();
    return now();
  }

  private static long jitNanos() {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
      return -1;
    }
    return jit.getTotalCompilationTime() * 1_000_000L;
  }

  /** How long a timed row waits at most for a quiet JIT: 15 s, not at all in a smoke run. */
  private static volatile long maxQuietWaitNanos = 15_000_000_000L;

  /**
   * A smoke run (the build's test of the command, at a tiny scale) does not wait for a quiet JIT
   * before its rows: its figures mean nothing, a fresh JVM's JIT is rarely quiet, and a wait of up
   * to a second before each of its thirty-odd rows was most of the test's time.
   */
  static void smokeRun(boolean smoke) {
    maxQuietWaitNanos = smoke ? 0L : 15_000_000_000L;
  }

  /**
   * Waits until the JIT has compiled nothing for 300 ms (at most 15 s). A warm-up makes the JIT
   * compile in the background for seconds after it ends: measured on a balancer drain, compiler
   * threads took 45% of the client's CPU during the timed drain that followed, and the drains after
   * a fill or a baseline varied most. Each timed row starts after this.
   */
  private static void awaitQuietJit() throws InterruptedException {
    if (jitNanos() < 0) {
      return;
    }
    long deadline = System.nanoTime() + maxQuietWaitNanos;
    long last = jitNanos();
    long quietSince = System.nanoTime();
    while (System.nanoTime() < deadline) {
      Thread.sleep(50);
      long now = jitNanos();
      if (now != last) {
        last = now;
        quietSince = System.nanoTime();
      } else if (System.nanoTime() - quietSince >= 300_000_000L) {
        return;
      }
    }
  }

  private static long clientNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return -1;
  }

  private static long serverNanos() {
    Path proc = Path.of("/proc");
    if (!Files.isDirectory(proc)) {
      return -1;
    }
    long ticks = 0;
    try (DirectoryStream<Path> pids = Files.newDirectoryStream(proc, "[0-9]*")) {
      for (Path pid : pids) {
        ticks += postgresTicks(pid.resolve("stat"));
      }
    } catch (IOException e) {
      return -1;
    }
    return ticks * NANOS_PER_TICK;
  }

  /** utime + stime of a {@code postgres} process, 0 for any other (or one that just ended). */
  private static long postgresTicks(Path stat) {
    String s;
    try {
      s = Files.readString(stat);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
    int open = s.indexOf('(');
    int close = s.lastIndexOf(')');
    if (open < 0 || close < open || !s.substring(open + 1, close).equals("postgres")) {
      return 0;
    }
    // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
    String[] f = s.substring(close + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }
}
