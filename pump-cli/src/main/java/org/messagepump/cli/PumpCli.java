package org.messagepump.cli;

import java.io.PrintWriter;
import java.util.Arrays;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code pump} command: a demo of all three drivers on an embedded PostgreSQL, schema
 * migration, status and the operations a team needs in production.
 */
@Command(
    name = "pump",
    mixinStandardHelpOptions = true,
    versionProvider = PumpCli.Version.class,
    description = "messagepump for Java: demo, migrate, status and operations.",
    subcommands = {
      DemoCommand.class,
      MigrateCommand.class,
      GrantsCommand.class,
      StatusCommand.class,
      DeadLettersCommand.class,
      CommandsCommand.class,
      CheckpointsCommand.class,
      BalancerCommand.class,
      PauseCommand.Pause.class,
      PauseCommand.Resume.class,
      SchedulesCommand.class,
      BenchCommand.class,
      ConsoleCommand.class,
      CommandLine.HelpCommand.class
    })
public final class PumpCli implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** Runs the CLI and exits with its exit code. */
  public static void main(String[] args) {
    boolean verbose = Arrays.asList(args).contains("--verbose");
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", verbose ? "info" : "error");
    }
    System.exit(
        execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
  }

  /**
   * Runs one command line with the given output and error writers and returns the exit code: 0
   * done, 1 failed (e.g. database unreachable), 2 bad arguments.
   */
  public static int execute(PrintWriter out, PrintWriter err, String... args) {
    boolean verbose = Arrays.asList(args).contains("--verbose");
    CommandLine cli = new CommandLine(new PumpCli());
    cli.setOut(out);
    cli.setErr(err);
    cli.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> {
          int code = e instanceof CliException c ? c.exitCode() : 1;
          if (code == 2) {
            err.println("pump: " + e.getMessage());
            commandLine.usage(err);
          } else {
            err.println("pump: " + oneLine(e));
          }
          if (verbose) {
            e.printStackTrace(err);
          }
          err.flush();
          return code;
        });
    int code = cli.execute(args);
    out.flush();
    err.flush();
    return code;
  }

  private static String oneLine(Throwable e) {
    if (e instanceof CliException) {
      return e.getMessage();
    }
    String m = e.getMessage();
    return e.getClass().getSimpleName()
        + (m == null ? "" : ": " + m.lines().findFirst().orElse(""));
  }

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /**
   * The version and commit the CLI was built from, from {@code version.properties} written by the
   * build. A build outside a git clone names no commit.
   */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      java.util.Properties built = new java.util.Properties();
      try (java.io.InputStream in = PumpCli.class.getResourceAsStream("version.properties")) {
        if (in != null) {
          built.load(in);
        }
      } catch (java.io.IOException e) {
        // unreadable: reported as a development build
      }
      String version = value(built, "version", "development");
      String commit = value(built, "commit", "none");
      return new String[] {
        "messagepump " + version + ("none".equals(commit) ? "" : " (commit " + commit + ")")
      };
    }

    private static String value(java.util.Properties p, String key, String fallback) {
      String v = p.getProperty(key);
      // A build outside a git clone leaves the commit's placeholder unfiltered.
      return v == null || v.isBlank() || v.startsWith("${") ? fallback : v.trim();
    }
  }
}
