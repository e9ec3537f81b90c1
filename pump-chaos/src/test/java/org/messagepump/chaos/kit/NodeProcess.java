package org.messagepump.chaos.kit;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A pump node in a JVM of its own, started from the test with the test's classpath, so that a test
 * can {@link #kill()} it with SIGKILL or freeze it with SIGSTOP ({@link #pause()}, {@link
 * #resume()}). The node's main class runs until its standard input closes ({@link
 * #stop(Duration)}); its output goes to a log file.
 */
public final class NodeProcess implements AutoCloseable {

  private final String name;
  private final List<String> command;
  private final Path log;
  private Process process;
  private int starts;
  private boolean paused;

  private NodeProcess(String name, List<String> command, Path log) {
    this.name = name;
    this.command = command;
    this.log = log;
  }

  /**
   * A node named {@code name} running {@code mainClass} with {@code args}, not yet started; its
   * output is appended to {@code logDirectory/<name>.log}.
   */
  public static NodeProcess of(String name, Path logDirectory, Class<?> mainClass, String... args) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>();
    cmd.add(java);
    cmd.add("-Xmx256m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass.getName());
    cmd.addAll(List.of(args));
    try {
      Files.createDirectories(logDirectory);
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot create " + logDirectory, e);
    }
    return new NodeProcess(name, List.copyOf(cmd), logDirectory.resolve(name + ".log"));
  }

  /** The node's name. */
  public String name() {
    return name;
  }

  /** How many times the node was started. */
  public int starts() {
    return starts;
  }

  /** Starts the JVM (again, after a kill). */
  public synchronized NodeProcess start() {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException("chaos: node " + name + " is running");
    }
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.redirectErrorStream(true);
    pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    try {
      process = pb.start();
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot start node " + name, e);
    }
    starts++;
    return this;
  }

  /** True while the JVM runs. */
  public synchronized boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** The JVM's process id, or -1 before the first start. */
  public synchronized long pid() {
    return process == null ? -1 : process.pid();
  }

  /** Kills the JVM with SIGKILL ({@code kill -9}) and waits until it is gone. */
  public synchronized void kill() {
    if (process == null) {
      return;
    }
    process.destroyForcibly();
    waitFor(Duration.ofSeconds(30));
    paused = false;
  }

  /**
   * Freezes the running JVM with SIGSTOP ({@code kill -STOP}), as a long GC pause, a suspended VM
   * or a descheduled container would: every thread stops, its connections stay open and silent.
   * Returns once the kernel reports the process stopped.
   */
  public synchronized void pause() {
    if (!isAlive()) {
      throw new IllegalStateException("chaos: node " + name + " is not running");
    }
    signal("STOP");
    paused = true;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!"T".equals(state()) && !"t".equals(state())) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "chaos: node " + name + " did not stop; its state is " + state());
      }
      sleep(10);
    }
  }

  /** Lets a JVM frozen by {@link #pause()} run again with SIGCONT ({@code kill -CONT}). */
  public synchronized void resume() {
    if (!paused) {
      throw new IllegalStateException("chaos: node " + name + " is not paused");
    }
    signal("CONT");
    paused = false;
  }

  /** True between {@link #pause()} and {@link #resume()} (or a kill). */
  public synchronized boolean paused() {
    return paused;
  }

  /** The process state letter of {@code /proc/<pid>/stat} (T when stopped), or "?" if unknown. */
  private String state() {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
      int close = stat.lastIndexOf(')');
      return close > 0 && stat.length() > close + 2 ? stat.substring(close + 2, close + 3) : "?";
    } catch (IOException e) {
      return "?";
    }
  }

  private void signal(String signal) {
    List<String> cmd = List.of("kill", "-" + signal, Long.toString(process.pid()));
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(
            "chaos: " + cmd + " failed: " + new String(p.getInputStream().readAllBytes()));
      }
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot run " + cmd, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("chaos: interrupted running " + cmd, e);
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("chaos: interrupted", e);
    }
  }

  /**
   * Asks the node to stop by closing its standard input, waits up to {@code timeout}, and kills it
   * if it is still running. Returns the exit code (137 for a kill).
   */
  public synchronized int stop(Duration timeout) {
    if (process == null) {
      return -1;
    }
    if (paused && process.isAlive()) {
      resume(); // a frozen JVM cannot read the end of its input
    }
    try {
      OutputStream in = process.getOutputStream();
      in.close();
    } catch (IOException ignored) {
      // already closed
    }
    if (!waitFor(timeout)) {
      process.destroyForcibly();
      waitFor(Duration.ofSeconds(30));
    }
    return process.exitValue();
  }

  private boolean waitFor(Duration timeout) {
    try {
      return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** The node's log file. */
  public Path log() {
    return log;
  }

  /** Stops the node (10 s grace) if it runs. */
  @Override
  public void close() {
    if (isAlive()) {
      stop(Duration.ofSeconds(10));
    }
  }
}
