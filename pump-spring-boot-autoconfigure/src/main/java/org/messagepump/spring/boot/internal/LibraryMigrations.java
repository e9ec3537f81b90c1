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
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.core.PumpException;
import org.messagepump.core.spi.Inputs;
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
              "org.messagepump.balancer.BalancerOperations",
              "balancer",
              "balancer_flyway_history",
              "classpath:db/balancer",
              false));

  /**
   * The schema of each module's tables ({@code messagepump.commands.schema}, {@code
   * messagepump.events.schema}, {@code messagepump.balancer.schema}).
   */
  public record Schemas(String commands, String events, String balancer) {

    /**
     * Checks each name by its module's rule (the module's longest schema name, no system schema),
     * naming the property of a name it refuses.
     *
     * @throws IllegalArgumentException naming the property of a bad schema name
     */
    public Schemas {
      if (present(0)) {
        Inputs.schema(property(0), commands);
      }
      if (present(1)) {
        Inputs.schema(property(1), events);
      }
      if (present(2)) {
        Inputs.schema(property(2), balancer);
      }
    }

    /** The schema of {@code module}, one of {@link #MODULES}, by its index. */
    String of(int module) {
      return switch (module) {
        case 0 -> commands;
        case 1 -> events;
        default -> balancer;
      };
    }

    static String property(int module) {
      return switch (module) {
        case 0 -> "messagepump.commands.schema";
        case 1 -> "messagepump.events.schema";
        default -> "messagepump.balancer.schema";
      };
    }
  }

  private LibraryMigrations() {}

  /** Whether module {@code i} of {@link #MODULES} is on the class path. */
  static boolean present(int i) {
    return ClassUtils.isPresent(
        MODULES.get(i).className(), LibraryMigrations.class.getClassLoader());
  }

  /**
   * Runs each present module's own {@code migrate(dataSource, schema)}; returns the modules
   * migrated.
   */
  public static List<String> library(DataSource dataSource, Schemas schemas) {
    List<String> done = new ArrayList<>();
    ClassLoader loader = LibraryMigrations.class.getClassLoader();
    if (ClassUtils.isPresent(MODULES.get(0).className(), loader)) {
      org.messagepump.commands.CommandOperations.of(dataSource, schemas.of(0)).migrate();
      done.add("commands");
    }
    if (ClassUtils.isPresent(MODULES.get(1).className(), loader)) {
      org.messagepump.eventstream.EventOperations.of(dataSource, schemas.of(1)).migrate();
      done.add("eventstream");
    }
    if (ClassUtils.isPresent(MODULES.get(2).className(), loader)) {
      BalancerOperations.of(dataSource, schemas.of(2)).migrate();
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
  public static List<String> flyway(Configuration application, Schemas schemas) {
    List<String> done = new ArrayList<>();
    ClassLoader loader = application.getClassLoader();
    for (int i = 0; i < MODULES.size(); i++) {
      Module m = MODULES.get(i);
      if (!ClassUtils.isPresent(m.className(), LibraryMigrations.class.getClassLoader())) {
        continue;
      }
      String schema = schemas.of(i);
      try {
        Flyway.configure(loader)
            .configuration(application)
            .javaMigrations(new JavaMigration[0])
            .target(MigrationVersion.LATEST)
            .schemas(schema)
            .defaultSchema(schema)
            .createSchemas(true)
            .table(m.historyTable())
            .locations(m.location())
            .placeholderReplacement(true)
            .placeholders(m.schemaPlaceholder() ? Map.of("schema", schema) : Map.of())
            .load()
            .migrate();
      } catch (FlywayException e) {
        throw new PumpException("migrating schema " + schema + " failed: " + e.getMessage(), e);
      }
      done.add(schema);
    }
    log.info("messagepump: migrated {} with the application's Flyway", done);
    return done;
  }
}
