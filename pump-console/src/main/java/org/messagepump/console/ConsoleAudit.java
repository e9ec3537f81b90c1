package org.messagepump.console;

import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Migrations;

/**
 * The console's audit table ({@code <schema>.audit}): every operator action, written in the same
 * transaction as the action, with who, from where, when, the action, every target and the result.
 * Create it once with {@link #migrate(DataSource)} (as the drivers' schemas: Flyway, its own
 * history table, serialized across processes); {@code pump console} does it when it starts, unless
 * read-only. A console refuses actions (503) while its audit table is missing.
 */
public final class ConsoleAudit {

  /** The console's default schema. */
  public static final String DEFAULT_SCHEMA = "pumpconsole";

  /** Flyway's history table in the console's schema. */
  public static final String HISTORY_TABLE = "pumpconsole_flyway_history";

  /** The logger the audit lines go to, at INFO (refused requests at WARN). */
  public static final String LOGGER = "org.messagepump.console.audit";

  private ConsoleAudit() {}

  /** Creates or upgrades the audit table in the default schema {@value #DEFAULT_SCHEMA}. */
  public static int migrate(DataSource dataSource) {
    return migrate(dataSource, DEFAULT_SCHEMA);
  }

  /**
   * Creates or upgrades the audit table in {@code schema} (created if missing).
   *
   * @param schema lower-case letters, digits and {@code _}, not starting with a digit, at most
   *     {@value Inputs#MAX_SCHEMA_LENGTH} characters
   * @return the number of migrations applied
   * @throws IllegalArgumentException for a schema name outside that rule
   */
  public static int migrate(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource");
    checkSchema(schema);
    return Migrations.migrate(
        dataSource, schema, HISTORY_TABLE, "classpath:db/pumpconsole", Map.of());
  }

  static String checkSchema(String schema) {
    return Inputs.schema("auditSchema", schema);
  }
}
