package org.messagepump.core;

import java.sql.Connection;
import java.util.Objects;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jooq.impl.DefaultConfiguration;

/**
 * One open database transaction: a JDBC {@link Connection} with autocommit off and a jOOQ {@link
 * DSLContext} for PostgreSQL bound to it. The pump owns commit and rollback; drivers and handlers
 * only write through it. {@code dsl().transaction(...)} runs as a savepoint of this transaction,
 * never as a commit.
 */
public final class Tx {

  private static final Settings SETTINGS =
      new Settings().withRenderSchema(true).withExecuteLogging(false);

  private final Connection connection;
  private DSLContext dsl; // created on first use: a poll that needs none pays nothing for it

  private Tx(Connection connection) {
    this.connection = Objects.requireNonNull(connection, "connection");
  }

  /**
   * Wraps a connection whose transaction the caller controls (for example to enqueue inside the
   * caller's own transaction). The connection is used as it is.
   */
  public static Tx of(Connection connection) {
    return new Tx(connection);
  }

  /** The JDBC connection of this transaction. */
  public Connection connection() {
    return connection;
  }

  /** A jOOQ context for PostgreSQL bound to this transaction's connection. */
  public DSLContext dsl() {
    if (dsl == null) {
      dsl =
          DSL.using(
              new DefaultConfiguration()
                  .set(connection)
                  .set(SQLDialect.POSTGRES)
                  .set(SETTINGS)
                  .set(new SavepointTransactionProvider(connection)));
    }
    return dsl;
  }
}
