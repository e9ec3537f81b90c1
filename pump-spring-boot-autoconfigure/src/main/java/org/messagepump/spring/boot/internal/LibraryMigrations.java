package org.messagepump.spring.boot.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.MigrationVersion;
import org.flywaydb.core.api.configuration.Configuration;
import org.flywaydb.core.api.migration.JavaMigration;
import org.messagepump.core.PumpException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.util.ClassUtils;

/**
 * Creates or upgrades the tables of every messagepump module on the classpath, at startup, before
 * any pump or producer bean is used: either through each module's own {@code migrate} ({@link
 * #library}), or through the application's Flyway configuration ({@link #flyway}).
 */
public final class LibraryMigrations {

  private static final Logger log = LoggerFactory.getLogger(LibraryMigrations.class);

  /**
   * One module's migrations: what its own {@code migrate(dataSource)} applies. The schema, history
   * table, location and placeholders repeat the module's (internal) values, so that switching
   * between the two modes keeps one history per schema (the order-service sample's test checks the
   * command queue's history table after a Flyway-mode start).
   */
  record Module(
      String className,
      String schema,
      String historyTable,
      String location,
      boolean schemaPlaceholder) {}

  static final List<Module> MODULES =
      List.of(
          new Module(
              "org.messagepump.commands.CommandQueue",
              "commandqueue",
              "commandqueue_flyway_history",
              "classpath:db/commandqueue",
              true),
          new Module(
              "org.messagepump.eventstream.EventStore",
              "eventstream",
              "eventstream_flyway_history",
              "classpath:db/eventstream",
              false),
          new Module(
              "org.messagepump.balancer.Balancer",
              "balancer",
              "balancer_flyway_history",
              "classpath:db/balancer",
              false));

  private LibraryMigrations() {}

  /** Runs each present module's own {@code migrate(dataSource)}; returns the modules migrated. */
  public static List<String> library(DataSource dataSource) {
    List<String> done = new ArrayList<>();
    ClassLoader loader = LibraryMigrations.class.getClassLoader();
    if (ClassUtils.isPresent(MODULES.get(0).className(), loader)) {
      org.messagepump.commands.CommandQueue.migrate(dataSource);
      done.add("commands");
    }
    if (ClassUtils.isPresent(MODULES.get(1).className(), loader)) {
      org.messagepump.eventstream.EventStore.migrate(dataSource);
      done.add("eventstream");
    }
    if (ClassUtils.isPresent(MODULES.get(2).className(), loader)) {
      org.messagepump.balancer.Balancer.migrate(dataSource);
      done.add("balancer");
    }
    log.info("messagepump: migrated {} with the library's migrate", done);
    return done;
  }

  /**
   * Runs each present module's locations with the application's Flyway configuration (its data
   * source, credentials, callbacks, validation settings), after the application's own migrations:
   * each module into its own schema with its own history table, as the module's {@code migrate}
   * does, because every module's scripts start at V1 and would collide in one history. The
   * application's target version, Java migrations and placeholders are not carried over: they
   * belong to the application's scripts.
   */
  public static List<String> flyway(Configuration application) {
    List<String> done = new ArrayList<>();
    ClassLoader loader = application.getClassLoader();
    for (Module m : MODULES) {
      if (!ClassUtils.isPresent(m.className(), LibraryMigrations.class.getClassLoader())) {
        continue;
      }
      try {
        Flyway.configure(loader)
            .configuration(application)
            .javaMigrations(new JavaMigration[0])
            .target(MigrationVersion.LATEST)
            .schemas(m.schema())
            .defaultSchema(m.schema())
            .createSchemas(true)
            .table(m.historyTable())
            .locations(m.location())
            .placeholderReplacement(true)
            .placeholders(m.schemaPlaceholder() ? Map.of("schema", m.schema()) : Map.of())
            .load()
            .migrate();
      } catch (FlywayException e) {
        throw new PumpException("migrating schema " + m.schema() + " failed: " + e.getMessage(), e);
      }
      done.add(m.schema());
    }
    log.info("messagepump: migrated {} with the application's Flyway", done);
    return done;
  }
}
