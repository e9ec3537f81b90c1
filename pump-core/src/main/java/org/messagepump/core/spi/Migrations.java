package org.messagepump.core.spi;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.PumpException;

/**
 * Applies a driver's Flyway migrations to one schema, safely when several processes start together:
 * for driver authors, and what the bundled drivers' {@code migrate} methods call.
 *
 * <p>Every call through this class, whatever the schema or driver, first takes one advisory lock in
 * a transaction of its own on a connection of its own (held only while it migrates, released even
 * when the migration fails; it works behind PgBouncer's transaction pooling too), so concurrent
 * calls run one after the other: the first creates the schema and applies what is missing, the next
 * find nothing left to apply. Flyway alone would let two processes race to create the schema or the
 * history table. A call therefore needs two connections of the pool at once.
 *
 * <pre>{@code
 * int applied = Migrations.migrate(
 *     dataSource, "tinyqueue", "tinyqueue_flyway_history", "classpath:db/tinyqueue",
 *     Map.of("schema", "tinyqueue"));
 * }</pre>
 */
public final class Migrations {

  /**
   * Key of the advisory lock serializing migrations ("cmdqueue" in ASCII: the key the command queue
   * took before this class existed, kept so that processes of both versions still serialize).
   */
  private static final long LOCK_KEY = 0x636d_6471_7565_7565L;

  private Migrations() {}

  /**
   * Applies the migrations found at {@code location} to {@code schema} (created if missing), with
   * the history table {@code historyTable} in that schema, so every schema keeps its own history.
   * Flyway runs with {@code schema} as its only and default schema and with {@code placeholders}
   * (e.g. {@code Map.of("schema", schema)} for scripts that write {@code "${schema}".table}).
   * Serialized across processes as the class describes; idempotent.
   *
   * @param dataSource where to migrate (a pool: the call takes two connections)
   * @param schema the schema: lower-case letters, digits and {@code _}, not starting with a digit,
   *     at most 63 characters (drivers may be stricter), not a PostgreSQL system schema ({@code
   *     pg_*}, {@code information_schema}); see {@link Inputs#schema}
   * @param historyTable Flyway's history table, the same rule without the system-schema one ({@link
   *     Inputs#identifier})
   * @param location where Flyway finds the scripts, e.g. {@code "classpath:db/commandqueue"}
   * @param placeholders placeholder values for the scripts; null means none
   * @return the number of migrations this call applied (0 when the schema was up to date)
   * @throws IllegalArgumentException for a schema or history table outside the rule, or a blank
   *     location
   * @throws PumpException when Flyway fails (the message says why)
   * @throws DatabaseException when the lock cannot be taken or released
   */
  public static int migrate(
      DataSource dataSource,
      String schema,
      String historyTable,
      String location,
      Map<String, String> placeholders) {
    Objects.requireNonNull(dataSource, "dataSource");
    Inputs.schema("schema", schema);
    Inputs.identifier("historyTable", historyTable, 63);
    if (location == null || location.isBlank()) {
      throw new IllegalArgumentException("location must not be blank");
    }
    Map<String, String> values = placeholders == null ? Map.of() : Map.copyOf(placeholders);
    try (Connection lock = dataSource.getConnection()) {
      // A transaction-scoped lock in a transaction left open while Flyway works on other
      // connections: behind PgBouncer in transaction pooling mode an open transaction keeps its
      // server connection, whereas a session lock would stay on whichever server connection ran
      // it and its unlock could land on another one (docs/deployment.md). Session and transaction
      // advisory locks of one key conflict, so older versions' session lock still serializes.
      boolean autoCommit = lock.getAutoCommit();
      lock.setAutoCommit(false);
      advisory(lock, "SELECT pg_advisory_xact_lock(?)");
      try {
        return Flyway.configure()
            .dataSource(dataSource)
            .schemas(schema)
            .defaultSchema(schema)
            .createSchemas(true)
            .table(historyTable)
            .placeholders(values)
            .locations(location)
            .load()
            .migrate()
            .migrationsExecuted;
      } catch (FlywayException e) {
        throw new PumpException("migrating schema " + schema + " failed: " + e.getMessage(), e);
      } finally {
        lock.rollback(); // ends the transaction: releases the lock
        lock.setAutoCommit(autoCommit);
      }
    } catch (SQLException e) {
      throw new DatabaseException("migrating schema " + schema, e);
    }
  }

  private static void advisory(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, LOCK_KEY);
      ps.execute();
    }
  }
}
