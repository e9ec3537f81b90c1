package org.messagepump.cli;

import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The bench's baseline ({@link BenchBaseline}) run in a JVM of its own, started by the bench and
 * fed one run at a time over its standard input, with its own connections to the same database.
 *
 * <p>In the bench's JVM the baseline's plain JDBC loop ran JDK and pgjdbc code that the driver
 * under test had run first, compiled by the JIT for that driver's workload: two builds gave the
 * same loop different speeds (in interleaved runs, 2,877–3,356 deliveries/s with 120–138 µs of
 * client CPU per delivery in one build's JVMs, 3,695–4,000 with 92–120 µs in the other's), so a
 * ratio carried a bias of the build as large as the differences it was read for. In its own JVM the
 * loop runs only itself: the same code in the same state whatever build runs beside it.
 *
 * <p>The protocol is lines of text: the bench writes {@code run <workers> <rows> <timed>}, the
 * process answers {@code baseline ok <rate> <client> <server> <jit>} (deliveries per second, then
 * CPU per delivery in µs as {@link CpuMeter} gives them) or {@code baseline error <message>}. Other
 * lines on its standard output are not answers. It ends when its standard input ends, so it never
 * outlives the bench.
 */
final class BaselineProcess implements AutoCloseable {

  private static final String ANSWER = "baseline ";
  private static final String OK = ANSWER + "ok";
  private static final String ERROR = ANSWER + "error ";
  private static final String URL = "PUMP_BASELINE_JDBC_URL";
  private static final String USER = "PUMP_BASELINE_USER";
  private static final String PASSWORD = "PUMP_BASELINE_PASSWORD";

  /** Connections of the process's pool: the most workers a baseline runs, and one to set up. */
  private static final int POOL_SIZE = 9;

  private final Process process;
  private final Writer in;
  private final BufferedReader out;

  private BaselineProcess(Process process) {
    this.process = process;
    this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    this.out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  /**
   * Starts the process on the database of {@code pool} (its URL and credentials, passed in the
   * environment, not on the command line), with this JVM's {@code java} and class path, and waits
   * until its pool is open. {@code smoke}: a smoke run of the bench (no waits for a quiet JIT).
   */
  static BaselineProcess start(HikariDataSource pool, boolean smoke) {
    List<String> command = new ArrayList<>();
    command.add(javaExecutable());
    // The bench's own log level (the CLI's default: errors only).
    String level = "org.slf4j.simpleLogger.defaultLogLevel";
    command.add("-D" + level + "=" + System.getProperty(level, "error"));
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(BaselineProcess.class.getName());
    command.add(smoke ? "smoke" : "measure");
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.redirectError(ProcessBuilder.Redirect.INHERIT);
    builder.environment().put(URL, pool.getJdbcUrl());
    if (pool.getUsername() != null) {
      builder.environment().put(USER, pool.getUsername());
    }
    if (pool.getPassword() != null) {
      builder.environment().put(PASSWORD, pool.getPassword());
    }
    BaselineProcess started;
    try {
      started = new BaselineProcess(builder.start());
    } catch (IOException e) {
      throw new CliException("cannot start the baseline's JVM: " + e.getMessage(), 1, e);
    }
    try {
      started.answer();
    } catch (RuntimeException e) {
      started.close();
      throw e;
    }
    return started;
  }

  private static String javaExecutable() {
    return ProcessHandle.current()
        .info()
        .command()
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
  }

  /**
   * Runs the baseline with {@code workers} connections over {@code rows} rows: {@code timed} waits
   * for the process's JIT to be quiet first, as every timed row does. Returns the rate, then the
   * CPU per delivery (client, server, JIT) as {@link CpuMeter.Reading#perDeliveryMicrosUntil}.
   */
  double[] run(int workers, int rows, boolean timed) {
    try {
      in.write("run " + workers + " " + rows + " " + timed + "\n");
      in.flush();
    } catch (IOException e) {
      throw new CliException("the baseline's JVM is gone: " + e.getMessage(), 1, e);
    }
    String[] f = answer().split(" ");
    double[] result = new double[4];
    for (int i = 0; i < 4; i++) {
      result[i] = Double.parseDouble(f[i]);
    }
    return result;
  }

  /** The next answer's text after {@code baseline ok }, or a {@link CliException}. */
  private String answer() {
    try {
      for (String line = out.readLine(); line != null; line = out.readLine()) {
        if (line.startsWith(OK)) {
          return line.substring(OK.length()).trim();
        }
        if (line.startsWith(ERROR)) {
          throw new CliException("the baseline failed: " + line.substring(ERROR.length()), 1);
        }
      }
    } catch (IOException e) {
      throw new CliException("cannot read the baseline's JVM: " + e.getMessage(), 1, e);
    }
    throw new CliException("the baseline's JVM ended (exit " + exitCode() + ")", 1);
  }

  private String exitCode() {
    try {
      return process.waitFor(10, TimeUnit.SECONDS) ? String.valueOf(process.exitValue()) : "none";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "none";
    }
  }

  /** Ends the process: its input closed, it closes its pool and exits; killed after 10 s. */
  @Override
  public void close() {
    try {
      in.close();
    } catch (IOException ignored) {
      // the process is gone already; waitFor below returns at once
    }
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The process: opens its pool, answers {@code baseline ok} once ready, then one answer per
   * request line until its input ends.
   */
  public static void main(String[] args) throws Exception {
    boolean smoke = args.length > 0 && args[0].equals("smoke");
    CpuMeter.smokeRun(smoke);
    PrintStream answers = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    try (HikariDataSource pool =
        Database.pool(
            System.getenv(URL),
            System.getenv(USER),
            System.getenv(PASSWORD),
            POOL_SIZE,
            "pump-bench-baseline")) {
      if (!smoke) {
        CpuMeter.warmUp();
      }
      answers.println(OK);
      BufferedReader requests =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = requests.readLine(); line != null; line = requests.readLine()) {
        answers.println(ANSWER + answer(pool, line));
      }
    } catch (RuntimeException e) {
      answers.println(ERROR + oneLine(e));
      throw e;
    }
  }

  /** The answer to one request line, without the {@code baseline } prefix. */
  private static String answer(HikariDataSource pool, String line) {
    String[] f = line.split(" ");
    try {
      if (f.length != 4 || !f[0].equals("run")) {
        return "error not a request: " + line;
      }
      int workers = Integer.parseInt(f[1]);
      int rows = Integer.parseInt(f[2]);
      CpuMeter.Reading before =
          Boolean.parseBoolean(f[3]) ? CpuMeter.startTimedRow() : CpuMeter.now();
      double rate = BenchBaseline.skipLocked(pool, workers, rows);
      double[] cpu = before.perDeliveryMicrosUntil(CpuMeter.now(), rows);
      return String.format(Locale.ROOT, "ok %.3f %.3f %.3f %.3f", rate, cpu[0], cpu[1], cpu[2]);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "error interrupted";
    } catch (Exception e) {
      return "error " + oneLine(e);
    }
  }

  private static String oneLine(Exception e) {
    return String.valueOf(e.getMessage()).replace('\n', ' ');
  }
}
