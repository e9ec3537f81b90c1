package org.messagepump.cli;

import javax.sql.DataSource;
import org.messagepump.commands.CommandOperations;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.eventstream.EventOperations;

/**
 * The stores the operational commands read. They never decode payloads, so an empty type registry
 * is enough: operations work on any database whatever its message classes.
 */
final class Stores {

  private static final JsonMessageCodec NO_TYPES =
      JsonMessageCodec.of(MessageTypes.builder().build());

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
