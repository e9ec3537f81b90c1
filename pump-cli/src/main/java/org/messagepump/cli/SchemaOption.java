package org.messagepump.cli;

import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.eventstream.EventStore;
import picocli.CommandLine.Option;

/**
 * {@code --schema NAME} of the commands that work on one driver's tables: the schema the driver was
 * migrated into, its default unless given. A name the driver refuses is exit code 2, before any
 * statement on its tables.
 */
final class SchemaOption {

  private SchemaOption() {}

  /** The command queue's schema. */
  static final class Commands {
    @Option(
        names = "--schema",
        paramLabel = "NAME",
        defaultValue = CommandQueue.DEFAULT_SCHEMA,
        description = "The command queue's schema (default: ${DEFAULT-VALUE}).")
    String schema;
  }

  /** The event store's schema. */
  static final class Events {
    @Option(
        names = "--schema",
        paramLabel = "NAME",
        defaultValue = EventStore.DEFAULT_SCHEMA,
        description = "The event store's schema (default: ${DEFAULT-VALUE}).")
    String schema;
  }

  /** The balancer's schema. */
  static final class Balancers {
    @Option(
        names = "--schema",
        paramLabel = "NAME",
        defaultValue = BalancerOperations.DEFAULT_SCHEMA,
        description = "The balancer's schema (default: ${DEFAULT-VALUE}).")
    String schema;
  }
}
