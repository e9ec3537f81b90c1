package org.messagepump.cli;

import javax.sql.DataSource;
import org.messagepump.commands.CommandOperations;
import org.messagepump.eventstream.EventOperations;

/**
 * The operators the operational commands use, with a bad schema turned into the CLI's usage error.
 * Operators need no codec: the commands work on any database whatever its message classes.
 */
final class Stores {

  private Stores() {}

  static CommandOperations commands(DataSource ds, String schema) {
    try {
      return CommandOperations.of(ds, schema);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage(), 2);
    }
  }

  static EventOperations events(DataSource ds, String schema) {
    try {
      return EventOperations.of(ds, schema);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage(), 2);
    }
  }
}
