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
import picocli.CommandLine.ParameterException;
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

  @Option(
      names = "--schema",
      paramLabel = "NAME",
      description = "The schema name, when it is not the driver's default (needs --only).")
  String schemaName;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (schemaName != null && only == null) {
      throw new ParameterException(spec.commandLine(), "--schema needs --only");
    }
    try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
      for (Schema s : Schema.values()) {
        if (only == null || only == s) {
          String name = schemaName == null ? defaultName(s) : schemaName;
          try {
            migrate(database.dataSource(), s, name);
          } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
          }
          spec.commandLine().getOut().println("migrated " + s + " (schema " + name + ")");
        }
      }
    }
    return 0;
  }

  /** The schema a driver uses unless told otherwise. */
  static String defaultName(Schema schema) {
    return switch (schema) {
      case commands -> CommandQueue.DEFAULT_SCHEMA;
      case eventstream -> EventStore.DEFAULT_SCHEMA;
      case balancer -> Balancer.DEFAULT_SCHEMA;
    };
  }

  static void migrate(DataSource ds, Schema schema) {
    migrate(ds, schema, defaultName(schema));
  }

  static void migrate(DataSource ds, Schema schema, String name) {
    switch (schema) {
      case commands:
        CommandQueue.migrate(ds, name);
        break;
      case eventstream:
        EventStore.migrate(ds, name);
        break;
      default:
        Balancer.migrate(ds, name);
    }
  }

  static void migrateAll(DataSource ds) {
    for (Schema s : Schema.values()) {
      migrate(ds, s);
    }
  }
}
