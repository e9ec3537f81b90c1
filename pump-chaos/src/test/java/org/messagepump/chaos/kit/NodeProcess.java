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
 * can {@link #kill()} it with SIGKILL. The node's main class runs until its standard input closes
 * ({@link #stop(Duration)}); its output goes to a log file.
 */
public final class NodeProcess implements AutoCloseable {

  private final String name;
  private final List<String> command;
  private final Path log;
  private Process process;
  private int starts;

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
  }

  /**
   * Asks the node to stop by closing its standard input, waits up to {@code timeout}, and kills it
   * if it is still running. Returns the exit code (137 for a kill).
   */
  public synchronized int stop(Duration timeout) {
    if (process == null) {
      return -1;
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
