package org.messagepump.core;

import java.sql.SQLException;

/** A database operation of the public API failed; wraps the {@link SQLException}. */
public class DatabaseException extends PumpException {

  /** Wraps {@code cause}, saying what was being done. */
  public DatabaseException(String doing, SQLException cause) {
    super(
        doing + " failed: " + cause.getMessage() + " (SQLState " + cause.getSQLState() + ")",
        cause);
  }

  /** The SQLState of the underlying error. */
  public String sqlState() {
    return ((SQLException) getCause()).getSQLState();
  }
}
