package org.messagepump.cli;

import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.eventstream.EventStore;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code pump pause} and {@code pump resume}: a command type, an event handler key or a balancer
 * group paused for every pump of every process (stored in the queue's {@code paused_types}, the
 * event store's {@code paused_handlers} or the balancer's {@code paused_groups}; acquisition skips
 * it).
 */
final class PauseCommand {

  private PauseCommand() {}

  /** What to pause or resume: exactly one of a command type, a handler key, a group. */
  static final class Target {
    @Parameters(
        paramLabel = "TYPE",
        arity = "0..1",
        description = "The command type name (or use --handler or --group).")
    String type;

    @Option(names = "--handler", paramLabel = "KEY", description = "An event handler key.")
    String handler;

    @Option(names = "--group", paramLabel = "GROUP", description = "A balancer partition group.")
    String group;

    @Option(
        names = "--schema",
        description =
            "The schema of the command queue, event store or balancer (default: theirs, "
                + CommandQueue.DEFAULT_SCHEMA
                + ", "
                + EventStore.DEFAULT_SCHEMA
                + ", "
                + BalancerOperations.DEFAULT_SCHEMA
                + ").")
    String schema;

    void check() {
      int given = (type != null ? 1 : 0) + (handler != null ? 1 : 0) + (group != null ? 1 : 0);
      if (given != 1) {
        throw new CliException("give exactly one of TYPE, --handler KEY, --group GROUP", 2);
      }
    }

    String what() {
      return type != null
          ? "command type " + type
          : handler != null ? "event handler " + handler : "balancer group " + group;
    }

    boolean pause(DataSource ds, String reason) {
      try {
        if (type != null) {
          return Stores.commands(ds, schemaOr(CommandQueue.DEFAULT_SCHEMA)).pauseType(type, reason);
        }
        if (handler != null) {
          return Stores.events(ds, schemaOr(EventStore.DEFAULT_SCHEMA))
              .pauseHandler(handler, reason);
        }
        return balancer(ds).pauseGroup(group, reason);
      } catch (IllegalArgumentException e) {
        throw new CliException(e.getMessage(), 2);
      }
    }

    boolean resume(DataSource ds) {
      try {
        if (type != null) {
          return Stores.commands(ds, schemaOr(CommandQueue.DEFAULT_SCHEMA)).resumeType(type);
        }
        if (handler != null) {
          return Stores.events(ds, schemaOr(EventStore.DEFAULT_SCHEMA)).resumeHandler(handler);
        }
        return balancer(ds).resumeGroup(group);
      } catch (IllegalArgumentException e) {
        throw new CliException(e.getMessage(), 2);
      }
    }

    private BalancerOperations balancer(DataSource ds) {
      return BalancerOperations.of(ds, schemaOr(BalancerOperations.DEFAULT_SCHEMA));
    }

    private String schemaOr(String dflt) {
      return schema == null ? dflt : schema;
    }
  }

  @Command(
      name = "pause",
      mixinStandardHelpOptions = true,
      description = {
        "Pause a command type, handler or group in every process.",
        "A command type (TYPE), an event handler (--handler KEY) or a balancer group (--group"
            + " GROUP), for every pump of every process: its work waits, producing goes on. Shown"
            + " by `pump status`; undone by `pump resume`."
      })
  static final class Pause implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin Target target;

    @Option(names = "--reason", description = "Why (shown by `pump status`).")
    String reason;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      target.check();
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        boolean changed = target.pause(database.dataSource(), reason);
        spec.commandLine()
            .getOut()
            .println(changed ? "paused " + target.what() : target.what() + " was already paused");
      }
      return 0;
    }
  }

  @Command(
      name = "resume",
      mixinStandardHelpOptions = true,
      description = {
        "Resume a command type, handler or group paused by `pump pause`.",
        "A command type (TYPE), an event handler (--handler KEY) or a balancer group (--group"
            + " GROUP)."
      })
  static final class Resume implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin Target target;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      target.check();
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        boolean changed = target.resume(database.dataSource());
        spec.commandLine()
            .getOut()
            .println(changed ? "resumed " + target.what() : target.what() + " was not paused");
      }
      return 0;
    }
  }
}
