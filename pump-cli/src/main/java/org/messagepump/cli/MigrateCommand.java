package org.messagepump.cli;

import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.messagepump.balancer.Balancer;
import org.messagepump.commands.CommandQueue;
import org.messagepump.eventstream.EventStore;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code pump migrate}: applies the schemas' Flyway migrations (idempotent). */
@Command(
    name = "migrate",
    mixinStandardHelpOptions = true,
    description = "Create or upgrade the schemas (commandqueue, eventstream, balancer).")
final class MigrateCommand implements Callable<Integer> {

  /** The schemas one can migrate alone. */
  enum Schema {
    commands,
    eventstream,
    balancer
  }

  @Mixin DatabaseOptions db;

  @Option(
      names = "--only",
      paramLabel = "SCHEMA",
      description = "Only this schema: ${COMPLETION-CANDIDATES}.")
  Schema only;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
      for (Schema s : Schema.values()) {
        if (only == null || only == s) {
          migrate(database.dataSource(), s);
          spec.commandLine().getOut().println("migrated " + s);
        }
      }
    }
    return 0;
  }

  static void migrate(DataSource ds, Schema schema) {
    switch (schema) {
      case commands:
        CommandQueue.migrate(ds);
        break;
      case eventstream:
        EventStore.migrate(ds);
        break;
      default:
        Balancer.migrate(ds);
    }
  }

  static void migrateAll(DataSource ds) {
    for (Schema s : Schema.values()) {
      migrate(ds, s);
    }
  }
}
