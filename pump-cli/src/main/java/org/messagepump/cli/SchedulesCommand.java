package org.messagepump.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.function.Function;
import org.messagepump.commands.ScheduleInfo;
import org.messagepump.commands.Schedules;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pump schedules list|pause|resume|trigger}: the recurring commands of a queue. */
@Command(
    name = "schedules",
    mixinStandardHelpOptions = true,
    description = "List, pause, resume or trigger recurring commands.",
    subcommands = {
      SchedulesCommand.ListSchedules.class,
      SchedulesCommand.Pause.class,
      SchedulesCommand.Resume.class,
      SchedulesCommand.Trigger.class
    })
final class SchedulesCommand implements Runnable {

  @Override
  public void run() {
    throw new CliException("say list, pause, resume or trigger", 2);
  }

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      description = "List the schedules: when they tick, their next and last tick, and counts.")
  static final class ListSchedules implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        List<ScheduleInfo> list =
            Stores.commands(database.dataSource(), schema.schema).schedules().list();
        Table t =
            new Table(
                "name",
                "when",
                "zone",
                "type",
                "state",
                "next tick",
                "last tick",
                "fired",
                "triggered",
                "misfire");
        for (ScheduleInfo s : list) {
          t.row(
              s.name(),
              s.when(),
              s.cron() == null ? "" : s.zone(),
              s.type(),
              s.paused() ? "paused" : "running",
              s.paused() || s.nextTickAt() == null ? "" : s.nextTickAt(),
              s.lastTickAt() == null ? "" : s.lastTickAt(),
              s.ticksFired(),
              s.triggered(),
              s.misfire());
        }
        PrintWriter out = spec.commandLine().getOut();
        t.print(out);
        out.printf("%d schedule%s%n", list.size(), list.size() == 1 ? "" : "s");
      }
      return 0;
    }
  }

  /** One named schedule and the operation on it. */
  abstract static class OnOne implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @Parameters(paramLabel = "NAME", description = "The schedule's name.")
    String name;

    @Spec CommandSpec spec;

    /** The message printed on success, or empty when the operation changed nothing. */
    abstract Optional<String> apply(Schedules schedules);

    /** The message when {@link #apply} changed nothing (the schedule exists). */
    abstract String unchanged();

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 2, spec.commandLine().getErr())) {
        Schedules schedules = Stores.commands(database.dataSource(), schema.schema).schedules();
        Optional<String> done;
        try {
          done = apply(schedules);
          if (done.isEmpty() && schedules.find(name).isEmpty()) {
            throw new CliException("no schedule named " + name, 1);
          }
        } catch (IllegalArgumentException e) {
          throw new CliException(e.getMessage(), 2);
        }
        spec.commandLine().getOut().println(done.orElseGet(this::unchanged));
      }
      return 0;
    }

    static Optional<String> when(boolean changed, String message) {
      return changed ? Optional.of(message) : Optional.empty();
    }
  }

  @Command(
      name = "pause",
      mixinStandardHelpOptions = true,
      description =
          "Pause a schedule for every scheduler of every process; ticks due while paused never"
              + " fire.")
  static final class Pause extends OnOne {
    @Override
    Optional<String> apply(Schedules schedules) {
      return when(schedules.pause(name), "paused schedule " + name);
    }

    @Override
    String unchanged() {
      return "schedule " + name + " was already paused";
    }
  }

  @Command(
      name = "resume",
      mixinStandardHelpOptions = true,
      description = "Resume a paused schedule from its first tick after now.")
  static final class Resume extends OnOne {
    @Override
    Optional<String> apply(Schedules schedules) {
      return when(schedules.resume(name), "resumed schedule " + name);
    }

    @Override
    String unchanged() {
      return "schedule " + name + " was not paused";
    }
  }

  @Command(
      name = "trigger",
      mixinStandardHelpOptions = true,
      description =
          "Enqueue a schedule's command now, once, outside its ticks (its next tick does not"
              + " move).")
  static final class Trigger extends OnOne {
    @Override
    Optional<String> apply(Schedules schedules) {
      Function<UUID, String> said = id -> "triggered schedule " + name + ": command " + id;
      return schedules.trigger(name).map(said);
    }

    @Override
    String unchanged() {
      return "";
    }
  }
}
