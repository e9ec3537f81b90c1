package org.messagepump.cli;

import java.util.concurrent.Callable;
import org.messagepump.commands.CommandQueue;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code pump pause} and {@code pump resume}: a command type paused for every pump of every process
 * (stored in the queue's {@code paused_types}; the claim statement skips it).
 */
final class PauseCommand {

  private PauseCommand() {}

  @Command(
      name = "pause",
      mixinStandardHelpOptions = true,
      description =
          "Pause a command type for every pump of every process: its commands wait, enqueueing"
              + " goes on. Shown by `pump status`; undone by `pump resume`.")
  static final class Pause implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Parameters(paramLabel = "TYPE", description = "The command type name.")
    String type;

    @Option(names = "--reason", description = "Why (shown by `pump status`).")
    String reason;

    @Option(
        names = "--schema",
        defaultValue = CommandQueue.DEFAULT_SCHEMA,
        description = "The command queue's schema (default ${DEFAULT-VALUE}).")
    String schema;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        boolean changed;
        try {
          changed = Stores.commands(database.dataSource(), schema).pauseType(type, reason);
        } catch (IllegalArgumentException e) {
          throw new CliException(e.getMessage(), 2);
        }
        spec.commandLine()
            .getOut()
            .println(changed ? "paused command type " + type : type + " was already paused");
      }
      return 0;
    }
  }

  @Command(
      name = "resume",
      mixinStandardHelpOptions = true,
      description = "Resume a command type paused with `pump pause`.")
  static final class Resume implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Parameters(paramLabel = "TYPE", description = "The command type name.")
    String type;

    @Option(
        names = "--schema",
        defaultValue = CommandQueue.DEFAULT_SCHEMA,
        description = "The command queue's schema (default ${DEFAULT-VALUE}).")
    String schema;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        boolean changed;
        try {
          changed = Stores.commands(database.dataSource(), schema).resumeType(type);
        } catch (IllegalArgumentException e) {
          throw new CliException(e.getMessage(), 2);
        }
        spec.commandLine()
            .getOut()
            .println(changed ? "resumed command type " + type : type + " was not paused");
      }
      return 0;
    }
  }
}
