package org.messagepump.cli;

import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandOperations;
import org.messagepump.eventstream.EventOperations;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code pump migrate}: applies the schemas' Flyway migrations (idempotent). */
@Command(
    name = "migrate",
    mixinStandardHelpOptions = true,
    description = "Create or upgrade the drivers' schemas (idempotent).")
final class MigrateCommand implements Callable<Integer> {

  @Mixin DatabaseOptions db;

  @Mixin DriverSelection drivers;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    java.util.Set<DriverName> selected = drivers.selected(spec);
    try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
      for (DriverName d : selected) {
        String name = drivers.schemaOf(d);
        try {
          migrate(database.dataSource(), d, name);
        } catch (IllegalArgumentException e) {
          throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        spec.commandLine().getOut().println("migrated " + d + " (schema " + name + ")");
      }
    }
    return 0;
  }

  static void migrate(DataSource ds, DriverName driver, String schema) {
    switch (driver) {
      case commands -> CommandOperations.of(ds, schema).migrate();
      case events -> EventOperations.of(ds, schema).migrate();
      case balancer -> BalancerOperations.of(ds, schema).migrate();
    }
  }

  static void migrateAll(DataSource ds) {
    for (DriverName d : DriverName.values()) {
      migrate(ds, d, d.defaultSchema());
    }
  }
}
