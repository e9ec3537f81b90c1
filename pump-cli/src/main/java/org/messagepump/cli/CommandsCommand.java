package org.messagepump.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.messagepump.commands.CancelResult;
import org.messagepump.commands.PendingCommand;
import org.messagepump.commands.PendingCommands;
import org.messagepump.commands.RescheduleResult;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pump commands find|cancel|reschedule}: one pending command, by message id or idempotency
 * key ({@link PendingCommands}). Exit code 1 when there is no such pending command, 3 when a
 * running handler holds it (nothing changed).
 */
@Command(
    name = "commands",
    mixinStandardHelpOptions = true,
    description = "Find, cancel or reschedule one pending command.",
    subcommands = {
      CommandsCommand.Find.class,
      CommandsCommand.Cancel.class,
      CommandsCommand.Reschedule.class
    })
final class CommandsCommand implements Runnable {

  /** The exit code of a command a running handler holds: nothing changed, try again later. */
  static final int HELD = 3;

  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new CliException("say find, cancel or reschedule", 2);
  }

  /** Which command: by message id or by idempotency key. */
  static final class Target {
    @Option(names = "--id", paramLabel = "MESSAGE_ID", description = "The command's message id.")
    UUID id;

    @Option(
        names = "--key",
        paramLabel = "KEY",
        description = "The idempotency key it was enqueued with.")
    String key;

    String describe() {
      return id != null ? "message id " + id : "idempotency key " + quoted(key);
    }
  }

  @Command(
      name = "find",
      mixinStandardHelpOptions = true,
      description = "Show a pending command: due, scheduled, or leased (by whom, until when).")
  static final class Find implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        PendingCommands pending = pending(database, schema);
        Optional<PendingCommand> found =
            checked(
                () -> target.id != null ? pending.find(target.id) : pending.findByKey(target.key));
        PendingCommand c =
            found.orElseThrow(
                () -> new CliException("no pending command with " + target.describe(), 1));
        PrintWriter out = spec.commandLine().getOut();
        line(out, "message id", c.messageId());
        line(out, "type", c.type());
        if (c.idempotencyKey() != null) {
          line(out, "idempotency key", quoted(c.idempotencyKey()));
        }
        line(out, "correlation id", c.correlationId() == null ? "" : c.correlationId());
        line(out, "enqueued at", c.enqueuedAt());
        line(out, "due at", c.dueAt());
        line(out, "failures", c.failures());
        line(out, "state", state(c));
        return 0;
      }
    }

    private static String state(PendingCommand c) {
      return switch (c.state()) {
        case DUE -> "due";
        case SCHEDULED -> "scheduled";
        case LEASED ->
            "leased by " + c.leaseHolder() + " until " + c.leaseExpiresAt() + " (running)";
      };
    }

    private static void line(PrintWriter out, String name, Object value) {
      out.printf("%-16s %s%n", name, value);
    }
  }

  @Command(
      name = "cancel",
      mixinStandardHelpOptions = true,
      description =
          "Delete a pending command so that it is never handled; its idempotency key is kept.")
  static final class Cancel implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        PendingCommands pending = pending(database, schema);
        CancelResult r =
            checked(
                () ->
                    target.id != null
                        ? pending.cancel(target.id)
                        : pending.cancelByKey(target.key));
        return switch (r) {
          case CANCELLED -> {
            spec.commandLine()
                .getOut()
                .printf("cancelled the command with %s%n", target.describe());
            yield 0;
          }
          case NOT_FOUND ->
              throw new CliException("no pending command with " + target.describe(), 1);
          case HELD -> throw held(target);
        };
      }
    }
  }

  /** When to: an instant, or a duration from now. */
  static final class When {
    @Option(
        names = "--at",
        paramLabel = "TIME",
        description = "Due at this instant (ISO-8601, e.g. 2030-01-31T08:00:00Z).")
    Instant at;

    @Option(
        names = "--in",
        paramLabel = "DURATION",
        description = "Due this long from now, by this machine's clock (ISO-8601, e.g. PT30M).")
    Duration in;

    Instant instant() {
      if (at != null) {
        return at;
      }
      if (in.isNegative()) {
        throw new CliException("--in must not be negative: " + in, 2);
      }
      try {
        return Instant.now().plus(in);
      } catch (ArithmeticException | java.time.DateTimeException e) {
        throw new CliException("--in is too long: " + in, 2);
      }
    }
  }

  @Command(
      name = "reschedule",
      mixinStandardHelpOptions = true,
      description = "Move a pending command to another time (a past time: due now).")
  static final class Reschedule implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    @ArgGroup(exclusive = true, multiplicity = "1")
    When when;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      Instant at = when.instant();
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        PendingCommands pending = pending(database, schema);
        RescheduleResult r =
            checked(
                () ->
                    target.id != null
                        ? pending.reschedule(target.id, at)
                        : pending.rescheduleByKey(target.key, at));
        return switch (r) {
          case RESCHEDULED -> {
            spec.commandLine()
                .getOut()
                .printf("rescheduled the command with %s to %s%n", target.describe(), at);
            yield 0;
          }
          case NOT_FOUND ->
              throw new CliException("no pending command with " + target.describe(), 1);
          case HELD -> throw held(target);
        };
      }
    }
  }

  private static PendingCommands pending(Database database, SchemaOption.Commands schema) {
    return Stores.commands(database.dataSource(), schema.schema).pending();
  }

  private static CliException held(Target target) {
    return new CliException(
        "the command with "
            + target.describe()
            + " is held by a running handler; nothing changed (it is handled, or due again"
            + " after a failure: try again then)",
        HELD);
  }

  /** Runs a call whose arguments the API checks: a refused argument is a usage error. */
  private static <T> T checked(java.util.function.Supplier<T> call) {
    try {
      return call.get();
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage(), 2);
    }
  }

  /** A key as typed, quoted, with control characters escaped so one line stays one line. */
  static String quoted(String s) {
    StringBuilder b = new StringBuilder("'");
    s.codePoints()
        .forEach(
            cp -> {
              if (Character.isISOControl(cp)) {
                b.append(String.format("\\u%04x", cp));
              } else {
                b.append(Character.toChars(cp));
              }
            });
    return b.append('\'').toString();
  }
}
