package org.messagepump.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.Checkpoint;
import org.messagepump.eventstream.EventOperations;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code pump checkpoints show|reset|set|resume}: event handler checkpoints. */
@Command(
    name = "checkpoints",
    mixinStandardHelpOptions = true,
    description = "Show, reset or move checkpoints; resume parked streams.",
    subcommands = {
      CheckpointsCommand.Show.class,
      CheckpointsCommand.Reset.class,
      CheckpointsCommand.SetOffset.class,
      CheckpointsCommand.Resume.class
    })
final class CheckpointsCommand implements Runnable {

  @Override
  public void run() {
    throw new CliException("say show, reset, set or resume", 2);
  }

  @Command(
      name = "show",
      mixinStandardHelpOptions = true,
      description = "Checkpoints per handler and stream.")
  static final class Show implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Events schema;

    @Option(names = "--handler", paramLabel = "KEY", description = "Only this handler.")
    String handler;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        EventOperations handlers = Stores.events(database.dataSource(), schema.schema);
        List<String> keys = handler == null ? handlers.handlerKeys() : List.of(handler);
        Table t = new Table("handler", "stream", "checkpoint", "end", "lag", "failures", "parked");
        for (String key : keys) {
          for (Checkpoint c : handlers.checkpoints(key)) {
            t.row(
                key,
                c.streamId(),
                c.offset(),
                c.streamNextOffset(),
                c.lag(),
                c.failures(),
                c.parked() ? "yes: " + DeadLettersCommand.abbreviate(c.parkedReason()) : "");
          }
        }
        PrintWriter out = spec.commandLine().getOut();
        t.print(out);
      }
      return 0;
    }
  }

  @Command(
      name = "reset",
      mixinStandardHelpOptions = true,
      description = {
        "Replay a handler from offset 0 on every stream.",
        "With --truncate, a rebuild: the reset and the emptying of the handler's read model"
            + " tables commit together, so every event is applied once to the emptied tables."
      })
  static final class Reset implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Events schema;

    @Option(
        names = "--handler",
        paramLabel = "KEY",
        required = true,
        description = "The handler key.")
    String handler;

    @Option(
        names = "--truncate",
        paramLabel = "TABLE",
        description =
            "Also empty this table (the read model the handler writes), in the reset's"
                + " transaction, after the reset. Repeatable; a name as SQL reads it"
                + " ([schema.]table, search_path applies).")
    List<String> truncate = List.of();

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        EventOperations handlers = Stores.events(database.dataSource(), schema.schema);
        int n =
            Transactions.inNew(
                database.dataSource(),
                "resetting handler '" + handler + "'",
                tx -> {
                  ReadModelTables tables = ReadModelTables.resolve(tx, truncate);
                  int reset = reset(handlers, tx);
                  tables.truncate(tx);
                  return reset;
                });
        PrintWriter out = spec.commandLine().getOut();
        out.printf("reset %s on %d stream%s%n", handler, n, n == 1 ? "" : "s");
        if (!truncate.isEmpty()) {
          out.printf("emptied %s in the same transaction%n", String.join(", ", truncate));
        }
      }
      return 0;
    }

    private int reset(EventOperations handlers, Tx tx) {
      try {
        return handlers.reset(tx, handler);
      } catch (IllegalArgumentException e) {
        throw new CliException(e.getMessage(), 2);
      }
    }
  }

  @Command(
      name = "set",
      mixinStandardHelpOptions = true,
      description = "Move one stream's checkpoint, guarded by its current value.")
  static final class SetOffset implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Events schema;

    @Option(
        names = "--handler",
        paramLabel = "KEY",
        required = true,
        description = "The handler key.")
    String handler;

    @Option(names = "--stream", required = true, description = "The stream id.")
    long stream;

    @Option(names = "--expected", required = true, description = "The checkpoint it must have now.")
    long expected;

    @Option(names = "--offset", required = true, description = "The new checkpoint.")
    long offset;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      if (expected < 0 || offset < 0) {
        throw new CliException("--expected and --offset must not be negative", 2);
      }
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        Stores.events(database.dataSource(), schema.schema)
            .setCheckpoint(handler, stream, expected, offset);
        spec.commandLine()
            .getOut()
            .printf("%s on stream %d: %d -> %d%n", handler, stream, expected, offset);
      }
      return 0;
    }
  }

  @Command(
      name = "resume",
      mixinStandardHelpOptions = true,
      description = "Resume a handler's parked streams.")
  static final class Resume implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Events schema;

    @Option(
        names = "--handler",
        paramLabel = "KEY",
        required = true,
        description = "The handler key.")
    String handler;

    @Option(names = "--stream", description = "Only this stream (default: every parked stream).")
    Long stream;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        EventOperations handlers = Stores.events(database.dataSource(), schema.schema);
        int n =
            stream == null
                ? handlers.resumeAll(handler)
                : (handlers.resume(handler, stream) ? 1 : 0);
        spec.commandLine().getOut().printf("resumed %d stream%s%n", n, n == 1 ? "" : "s");
      }
      return 0;
    }
  }
}
