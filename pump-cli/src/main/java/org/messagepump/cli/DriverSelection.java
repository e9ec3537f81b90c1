package org.messagepump.cli;

import java.util.EnumSet;
import java.util.Set;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.eventstream.EventStore;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * {@code --only DRIVER[,DRIVER…]} and {@code --schema NAME}: which drivers a command works on, and
 * the schema of the one driver it is limited to when that is not the driver's default.
 */
final class DriverSelection {

  @Option(
      names = "--only",
      split = ",",
      paramLabel = "DRIVER",
      description = "Only these drivers: ${COMPLETION-CANDIDATES} (comma-separated; default: all).")
  Set<DriverName> only;

  @Option(
      names = "--schema",
      paramLabel = "NAME",
      description =
          "The schema of the one driver given with --only, when it is not the driver's default"
              + " (commands: "
              + CommandQueue.DEFAULT_SCHEMA
              + ", events: "
              + EventStore.DEFAULT_SCHEMA
              + ", balancer: "
              + BalancerOperations.DEFAULT_SCHEMA
              + ").")
  String schema;

  /**
   * The drivers selected, in the order commands, events, balancer; refuses {@code --schema} without
   * exactly one driver in {@code --only} (exit code 2).
   */
  Set<DriverName> selected(CommandSpec spec) {
    if (schema != null && (only == null || only.size() != 1)) {
      throw new ParameterException(
          spec.commandLine(), "--schema needs --only with exactly one driver");
    }
    return only == null ? EnumSet.allOf(DriverName.class) : EnumSet.copyOf(only);
  }

  /** The schema of {@code driver}: the one given, or the driver's default. */
  String schemaOf(DriverName driver) {
    return schema == null ? driver.defaultSchema() : schema;
  }
}
