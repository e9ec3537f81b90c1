package org.messagepump.chaos.kit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.messagepump.testkit.PostgresServer;

/**
 * Stops and starts the embedded PostgreSQL server of this JVM on the same data directory and port,
 * as a real outage would: the postmaster gets SIGINT (fast shutdown: sessions are terminated) or
 * SIGQUIT (immediate: no checkpoint, crash recovery on the next start), and is started again with
 * the exact command line it recorded in {@code postmaster.opts}.
 */
public final class ServerControl {

  /** How the server goes down. */
  public enum StopMode {
    /** SIGINT: active transactions are rolled back, sessions ended, a shutdown checkpoint taken. */
    FAST("INT"),
    /** SIGQUIT: every process quits at once; the next start runs crash recovery. */
    IMMEDIATE("QUIT");

    private final String signal;

    StopMode(String signal) {
      this.signal = signal;
    }
  }

  private final PostgresServer server;
  private final Path dataDirectory;
  private final List<String> command;
  private Process started;

  private ServerControl(PostgresServer server, Path dataDirectory, List<String> command) {
    this.server = server;
    this.dataDirectory = dataDirectory;
    this.command = command;
  }

  /**
   * Control over {@code server}, which must be the embedded kind and running (its {@code
   * postmaster.opts} is read now).
   */
  public static ServerControl of(PostgresServer server) {
    Path dir = server.dataDirectory();
    if (dir == null) {
      throw new IllegalArgumentException(
          "ServerControl needs the embedded server; this one is " + server.kind());
    }
    try {
      String opts = Files.readString(dir.resolve("postmaster.opts"), StandardCharsets.UTF_8);
      List<String> command = new ArrayList<>(parseOpts(opts.strip()));
      String[] ids = postmasterIds(dir);
      if (ids != null && !ids[0].equals("0") && isRoot()) {
        // The postmaster runs as an unprivileged user (PostgreSQL refuses root): start it as that.
        command.addAll(
            0, List.of("setpriv", "--reuid=" + ids[0], "--regid=" + ids[1], "--clear-groups"));
      }
      return new ServerControl(server, dir, List.copyOf(command));
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot read postmaster.opts in " + dir, e);
    }
  }

  /** The real uid and gid of the running postmaster, or null when unknown. */
  private static String[] postmasterIds(Path dir) {
    try {
      String pid = Files.readAllLines(dir.resolve("postmaster.pid")).get(0).strip();
      String uid = null;
      String gid = null;
      for (String line : Files.readAllLines(Path.of("/proc", pid, "status"))) {
        if (line.startsWith("Uid:")) {
          uid = line.split("\\s+")[1];
        } else if (line.startsWith("Gid:")) {
          gid = line.split("\\s+")[1];
        }
      }
      return uid == null || gid == null ? null : new String[] {uid, gid};
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  /** Splits {@code postmaster.opts}: a binary path, then double-quoted arguments. */
  static List<String> parseOpts(String opts) {
    List<String> out = new ArrayList<>();
    int i = 0;
    int n = opts.length();
    while (i < n) {
      char c = opts.charAt(i);
      if (c == ' ') {
        i++;
      } else if (c == '"') {
        int end = opts.indexOf('"', i + 1);
        out.add(opts.substring(i + 1, end));
        i = end + 1;
      } else {
        int end = opts.indexOf(" \"", i);
        end = end < 0 ? n : end;
        out.add(opts.substring(i, end));
        i = end;
      }
    }
    if (out.isEmpty()) {
      throw new IllegalStateException("chaos: empty postmaster.opts");
    }
    return List.copyOf(out);
  }

  /** The command line the server is started with. */
  public List<String> command() {
    return command;
  }

  /** The postmaster's process id from {@code postmaster.pid}, or -1 when it is not running. */
  public long postmasterPid() {
    Path pidFile = dataDirectory.resolve("postmaster.pid");
    try {
      List<String> lines = Files.readAllLines(pidFile, StandardCharsets.UTF_8);
      return lines.isEmpty() ? -1 : Long.parseLong(lines.get(0).strip());
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
  }

  /** Signals the postmaster and waits until it has exited and released its data directory. */
  public void stop(StopMode mode, Duration timeout) {
    long pid = postmasterPid();
    if (pid < 0) {
      throw new IllegalStateException("chaos: PostgreSQL is not running in " + dataDirectory);
    }
    run(List.of("kill", "-" + mode.signal, Long.toString(pid)));
    long deadline = System.nanoTime() + timeout.toNanos();
    while (running(pid) || Files.exists(dataDirectory.resolve("postmaster.pid"))) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("chaos: PostgreSQL did not stop within " + timeout);
      }
      sleep(20);
    }
    if (started != null) {
      try {
        started.waitFor(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      started = null;
    }
  }

  /** Starts the server again with its recorded command line and waits until it accepts logins. */
  public void start(Duration timeout) {
    ProcessBuilder pb = new ProcessBuilder(launchCommand());
    pb.redirectErrorStream(true);
    pb.redirectOutput(
        ProcessBuilder.Redirect.appendTo(
            dataDirectory.resolveSibling(dataDirectory.getFileName() + "-chaos.log").toFile()));
    try {
      started = pb.start();
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot start " + command, e);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try (Connection c = server.connect("postgres")) {
        if (c.isValid(2)) {
          return;
        }
      } catch (SQLException e) {
        if (!started.isAlive()) {
          throw new IllegalStateException(
              "chaos: PostgreSQL exited with " + started.exitValue() + " on start", e);
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("chaos: PostgreSQL did not start within " + timeout, e);
        }
      }
      sleep(50);
    }
  }

  /**
   * The recorded command line; as root, inside a new user namespace without a uid mapping ({@code
   * unshare -U}), where the server's effective uid is not 0 (PostgreSQL refuses to run as root)
   * while the kernel still checks file access as the data directory's owner. That is how the
   * embedded server runs as root on the first start too.
   */
  private List<String> launchCommand() {
    boolean root = "root".equals(System.getProperty("user.name"));
    Path unshare = Path.of("/usr/bin/unshare");
    if (!root || !Files.isExecutable(unshare)) {
      return command;
    }
    List<String> wrapped = new java.util.ArrayList<>(List.of(unshare.toString(), "-U"));
    wrapped.addAll(command);
    return wrapped;
  }

  private static boolean running(long pid) {
    Path stat = Path.of("/proc", Long.toString(pid), "stat");
    try {
      String s = Files.readString(stat, StandardCharsets.UTF_8);
      int close = s.lastIndexOf(')');
      return close > 0 && s.length() > close + 2 && s.charAt(close + 2) != 'Z';
    } catch (IOException e) {
      return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)
          && !Files.exists(Path.of("/proc"));
    }
  }

  private static void run(List<String> cmd) {
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
}
