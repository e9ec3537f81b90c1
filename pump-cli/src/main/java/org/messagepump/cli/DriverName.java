package org.messagepump.cli;

import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.eventstream.EventStore;

/**
 * The names the CLI gives the three drivers, the same in every command that selects drivers ({@code
 * --only} of {@code migrate}, {@code grants}, {@code status} and {@code bench}). Picocli refuses
 * any other name with exit code 2 and a message listing these.
 */
enum DriverName {
  /** The command queue (pump-commands). */
  commands(CommandQueue.DEFAULT_SCHEMA),
  /** The event store (pump-eventstream). */
  events(EventStore.DEFAULT_SCHEMA),
  /** The partition balancer (pump-balancer). */
  balancer(BalancerOperations.DEFAULT_SCHEMA);

  private final String defaultSchema;

  DriverName(String defaultSchema) {
    this.defaultSchema = defaultSchema;
  }

  /** The schema the driver uses unless told otherwise. */
  String defaultSchema() {
    return defaultSchema;
  }
}
