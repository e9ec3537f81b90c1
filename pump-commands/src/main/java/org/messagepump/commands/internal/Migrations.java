package org.messagepump.commands.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.PumpException;

/**
 * Applies the {@code commandqueue} migrations with Flyway and its own history table. Processes that
 * start together serialize on a session advisory lock held on a separate connection, so schema
 * creation never races.
 */
public final class Migrations {

  /** Flyway's history table for this schema. */
  public static final String HISTORY_TABLE = "commandqueue_flyway_history";

  /** Key of the advisory lock serializing migrations ("cmdqueue" in ASCII). */
  private static final long LOCK_KEY = 0x636d_6471_7565_7565L;

  private Migrations() {}

  /**
   * Migrates {@code schema} (already validated); returns the number of migrations applied by this
   * call. The history table lives in that schema, so every schema has its own.
   */
  public static int migrate(DataSource dataSource, String schema) {
    try (Connection lock = dataSource.getConnection()) {
      advisory(lock, "SELECT pg_advisory_lock(?)");
      try {
        return Flyway.configure()
            .dataSource(dataSource)
            .schemas(schema)
            .defaultSchema(schema)
            .createSchemas(true)
            .table(HISTORY_TABLE)
            .placeholders(java.util.Map.of("schema", schema))
            .locations("classpath:db/" + CommandTables.SCHEMA)
            .load()
            .migrate()
            .migrationsExecuted;
      } catch (FlywayException e) {
        throw new PumpException("migrating schema " + schema + " failed: " + e.getMessage(), e);
      } finally {
        advisory(lock, "SELECT pg_advisory_unlock(?)");
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
