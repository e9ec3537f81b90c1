package org.messagepump.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.messagepump.commands.DeadLetter;
import org.messagepump.commands.DeadLetters;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pump dead-letters list|retry|discard|purge}: parked commands. */
@Command(
    name = "dead-letters",
    mixinStandardHelpOptions = true,
    description = "List, retry, discard or purge parked commands.",
    subcommands = {
      DeadLettersCommand.ListLetters.class,
      DeadLettersCommand.Retry.class,
      DeadLettersCommand.Discard.class,
      DeadLettersCommand.Purge.class
    })
final class DeadLettersCommand implements Runnable {

  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new CliException("say list, retry, discard or purge", 2);
  }

  /** Which dead letters an operation applies to: one id, or every one of a type. */
  static final class Target {
    @Parameters(
        arity = "0..1",
        paramLabel = "MESSAGE_ID",
        description = "The dead letter's message id.")
    UUID messageId;

    @Option(
        names = "--all-of-type",
        paramLabel = "TYPE",
        description = "Every dead letter of this type.")
    String type;
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "List dead letters.")
  static final class ListLetters implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @Option(names = "--type", description = "Only this command type.")
    String type;

    @Option(
        names = "--limit",
        defaultValue = "50",
        description = "At most this many (default ${DEFAULT-VALUE}).")
    int limit;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      if (limit < 1) {
        throw new CliException("--limit must be >= 1: " + limit, 2);
      }
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        DeadLetters letters = Stores.commands(database.dataSource(), schema.schema).deadLetters();
        List<DeadLetter> list = type == null ? letters.list(limit) : letters.list(type, limit);
        Table t = new Table("message id", "type", "failures", "parked at", "last error");
        for (DeadLetter d : list) {
          t.row(d.messageId(), d.type(), d.failures(), d.parkedAt(), abbreviate(d.lastError()));
        }
        PrintWriter out = spec.commandLine().getOut();
        t.print(out);
        out.printf(
            "%d shown, %d in all%n",
            list.size(), type == null ? letters.count() : letters.count(type));
      }
      return 0;
    }
  }

  @Command(
      name = "retry",
      mixinStandardHelpOptions = true,
      description = "Put dead letters back in the queue (failures reset).")
  static final class Retry implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        DeadLetters letters = Stores.commands(database.dataSource(), schema.schema).deadLetters();
        return report(
            spec,
            "retried",
            target.messageId != null
                ? (letters.retry(target.messageId) ? 1 : 0)
                : letters.retryAll(target.type),
            target);
      }
    }
  }

  @Command(
      name = "discard",
      mixinStandardHelpOptions = true,
      description = "Delete dead letters for good.")
  static final class Discard implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        DeadLetters letters = Stores.commands(database.dataSource(), schema.schema).deadLetters();
        return report(
            spec,
            "discarded",
            target.messageId != null
                ? (letters.discard(target.messageId) ? 1 : 0)
                : letters.discardAll(target.type),
            target);
      }
    }
  }

  @Command(
      name = "purge",
      mixinStandardHelpOptions = true,
      description = {
        "One pass of the retention job: delete dead letters parked longer ago than --older-than,"
            + " expired idempotency keys, and (with --history-older-than) old history rows.",
        "Batches of --batch-size rows, one short transaction each (rows locked with SKIP LOCKED)."
      })
  static final class Purge implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Commands schema;

    @Option(
        names = "--older-than",
        required = true,
        paramLabel = "DURATION",
        description = "Dead letters parked longer ago than this (ISO-8601, e.g. P30D).")
    java.time.Duration olderThan;

    @Option(
        names = "--history-older-than",
        paramLabel = "DURATION",
        description = "Also history rows written longer ago than this (ISO-8601, e.g. P7D).")
    java.time.Duration historyOlderThan;

    @Option(
        names = "--batch-size",
        defaultValue = "1000",
        description = "Rows per transaction (default ${DEFAULT-VALUE}).")
    int batchSize;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      org.messagepump.commands.CommandRetention.Purged p;
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        org.messagepump.commands.CommandRetention.Builder b;
        try {
          b =
              org.messagepump.commands.CommandRetention.builder(
                      Stores.commands(database.dataSource(), schema.schema))
                  .deadLetterAge(olderThan)
                  .batchSize(batchSize);
          if (historyOlderThan != null) {
            b.historyAge(historyOlderThan);
          }
        } catch (IllegalArgumentException e) {
          throw new CliException(e.getMessage(), 2);
        }
        p = b.build().purge();
      }
      spec.commandLine()
          .getOut()
          .printf(
              "purged %d dead letter%s, %d expired key%s, %d history row%s%n",
              p.deadLetters(),
              p.deadLetters() == 1 ? "" : "s",
              p.keys(),
              p.keys() == 1 ? "" : "s",
              p.history(),
              p.history() == 1 ? "" : "s");
      return 0;
    }
  }

  private static int report(CommandSpec spec, String verb, int n, Target target) {
    spec.commandLine().getOut().printf("%s %d dead letter%s%n", verb, n, n == 1 ? "" : "s");
    if (n == 0 && target.messageId != null) {
      throw new CliException("no dead letter with message id " + target.messageId, 1);
    }
    return 0;
  }

  static String abbreviate(String s) {
    if (s == null) {
      return "";
    }
    String line = s.lines().findFirst().orElse("");
    return line.length() > 80 ? line.substring(0, 77) + "..." : line;
  }
}
