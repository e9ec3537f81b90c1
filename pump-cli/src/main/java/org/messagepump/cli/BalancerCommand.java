package org.messagepump.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.core.spi.Inputs;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pump balancer stats|confirm|requeue}: partition groups and hand-off leases. */
@Command(
    name = "balancer",
    mixinStandardHelpOptions = true,
    description = "Group statistics; confirm or requeue handed-off messages.",
    subcommands = {
      BalancerCommand.Stats.class,
      BalancerCommand.Confirm.class,
      BalancerCommand.Requeue.class
    })
final class BalancerCommand implements Runnable {

  @Override
  public void run() {
    throw new CliException("say stats, confirm or requeue", 2);
  }

  @Command(
      name = "stats",
      mixinStandardHelpOptions = true,
      description = "Per group, or per key of one group.")
  static final class Stats implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Balancers schema;

    @Option(names = "--group", description = "Show the keys of this group.")
    String group;

    @Option(
        names = "--limit",
        defaultValue = "50",
        description = "At most this many keys (default ${DEFAULT-VALUE}).")
    int limit;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        PrintWriter out = spec.commandLine().getOut();
        if (group == null) {
          Table t = new Table("group", "partitions", "messages", "leases", "parked", "oldest (s)");
          for (GroupStats g :
              BalancerOperations.of(database.dataSource(), checked(schema)).groups()) {
            t.row(
                g.group(),
                g.partitions(),
                g.messages(),
                g.leases(),
                g.parked(),
                g.oldestAge() == null ? 0 : g.oldestAge().toSeconds());
          }
          t.print(out);
          return 0;
        }
        BalancerOperations operations =
            BalancerOperations.of(database.dataSource(), checked(schema));
        List<String> keys;
        try {
          keys = operations.partitionKeys(group);
        } catch (IllegalArgumentException e) {
          throw new CliException(e.getMessage(), 2);
        }
        Table t = new Table("key", "messages", "in flight", "leased message", "failures", "parked");
        for (String key : keys.stream().limit(limit).toList()) {
          PartitionStats s = operations.partitionStats(group, key).orElse(null);
          if (s != null) {
            t.row(
                key,
                s.messageCount(),
                s.inFlight() ? "yes" : "",
                s.leasedMessageId(),
                s.failures(),
                s.parked() ? "yes" : "");
          }
        }
        t.print(out);
        out.printf(
            "%d partitions, %d messages%n",
            operations.partitionCount(group), operations.messageCount(group));
      }
      return 0;
    }
  }

  @Command(
      name = "confirm",
      mixinStandardHelpOptions = true,
      description = "Confirm a handed-off message (removes it, frees its key).")
  static final class Confirm implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Balancers schema;

    @Parameters(index = "0", paramLabel = "MESSAGE_ID")
    long messageId;

    @Parameters(index = "1", paramLabel = "TOKEN")
    UUID token;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        return lease(
            spec,
            "confirmed",
            BalancerOperations.of(database.dataSource(), checked(schema)).confirm(messageId, token),
            messageId);
      }
    }
  }

  @Command(
      name = "requeue",
      mixinStandardHelpOptions = true,
      description = "Give a handed-off message back to its key (delivered again).")
  static final class Requeue implements Callable<Integer> {
    @Mixin DatabaseOptions db;

    @Mixin SchemaOption.Balancers schema;

    @Parameters(index = "0", paramLabel = "MESSAGE_ID")
    long messageId;

    @Parameters(index = "1", paramLabel = "TOKEN")
    UUID token;

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (Database database = Database.open(db, false, 4, spec.commandLine().getErr())) {
        return lease(
            spec,
            "requeued",
            BalancerOperations.of(database.dataSource(), checked(schema))
                .requeue(messageId, token, null),
            messageId);
      }
    }
  }

  /**
   * The schema given, once the balancer accepts it as a name (exit code 2 otherwise, before any
   * statement).
   */
  private static String checked(SchemaOption.Balancers schema) {
    try {
      return Inputs.schema("--schema", schema.schema);
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage(), 2);
    }
  }

  private static int lease(CommandSpec spec, String verb, LeaseResult result, long messageId) {
    switch (result) {
      case APPLIED:
        spec.commandLine().getOut().printf("%s message %d%n", verb, messageId);
        return 0;
      case STALE_TOKEN:
        throw new CliException(
            "message "
                + messageId
                + ": the token is stale (the lease expired and was handed off again)",
            1);
      default:
        throw new CliException("message " + messageId + ": no such handed-off message", 1);
    }
  }
}
