package org.messagepump.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;
import picocli.CommandLine;

/**
 * One vocabulary across the CLI: the same driver names for every {@code --only}, {@code --schema}
 * on every command that reads or writes a driver's tables, and a top-level help whose command
 * descriptions are whole.
 */
@ExtendWith(PostgresExtension.class)
class CliConsistencyIT {

  record Result(int code, String out, String err) {}

  record Probed(int n) {}

  private static final String VALID_NAMES = "commands, events, balancer";

  private static TestDatabase db;

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
    Result defaults = runOnDb("migrate");
    assertThat(defaults.code()).as(defaults.err()).isZero();
  }

  private static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = PumpCli.execute(new PrintWriter(out), new PrintWriter(err), args);
    return new Result(code, out.toString(), err.toString());
  }

  private static Result runOnDb(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--jdbc-url=" + db.jdbcUrl());
    all.add("--user=" + db.server().user());
    all.add("--password=" + db.server().password());
    return run(all.toArray(String[]::new));
  }

  private static JsonNode json(Result r) throws Exception {
    assertThat(r.code()).as(r.err()).isZero();
    return new ObjectMapper().readTree(r.out());
  }

  @Test
  void everyCommandThatSelectsDriversTakesTheSameNames() throws Exception {
    Result migrated = runOnDb("migrate", "--only", "commands,events,balancer");
    assertThat(migrated.code()).as(migrated.err()).isZero();
    assertThat(migrated.out())
        .contains(
            "migrated commands (schema commandqueue)",
            "migrated events (schema eventstream)",
            "migrated balancer (schema balancer)");
    Result grants = run("grants", "--role", "app", "--only", "events");
    assertThat(grants.code()).as(grants.err()).isZero();
    assertThat(grants.out()).contains("\"eventstream\"").doesNotContain("\"commandqueue\"");
    JsonNode status = json(runOnDb("status", "--only", "events,balancer", "--json"));
    assertThat(status.has("eventHandlers")).isTrue();
    assertThat(status.has("balancer")).isTrue();
    assertThat(status.has("commands")).isFalse();

    // Any other name is a usage error naming the valid ones, before anything runs.
    for (String[] command :
        List.of(
            new String[] {"migrate"},
            new String[] {"grants", "--role", "app"},
            new String[] {"status"},
            new String[] {"bench", "--quick"})) {
      for (String wrong : List.of("eventstream", "commands,queue")) {
        List<String> args = new ArrayList<>(List.of(command));
        args.add("--only");
        args.add(wrong);
        Result r = runOnDb(args.toArray(String[]::new));
        assertThat(r.code()).as(String.join(" ", args)).isEqualTo(2);
        assertThat(r.err()).as(String.join(" ", args)).contains(VALID_NAMES);
      }
    }
    Result twoWithSchema = runOnDb("status", "--only", "commands,events", "--schema", "s");
    assertThat(twoWithSchema.code()).isEqualTo(2);
    assertThat(twoWithSchema.err()).contains("--schema needs --only with exactly one driver");
    assertThat(runOnDb("migrate", "--schema", "s").code()).isEqualTo(2);
  }

  @Test
  void schemaReachesADriverMigratedIntoAnotherSchema() throws Exception {
    DataSource ds = db.dataSource();
    for (String[] m :
        List.of(
            new String[] {"commands", "tenant_c"},
            new String[] {"events", "tenant_e"},
            new String[] {"balancer", "tenant_b"})) {
      Result r = runOnDb("migrate", "--only", m[0], "--schema", m[1]);
      assertThat(r.code()).as(r.err()).isZero();
      assertThat(r.out()).contains("migrated " + m[0] + " (schema " + m[1] + ")");
    }
    JsonMessageCodec codec =
        JsonMessageCodec.of(MessageTypes.builder().register(Probed.class, "t.Probed").build());

    // The command queue in tenant_c: one command due, one dead letter.
    CommandQueue queue = CommandQueue.builder(ds).schema("tenant_c").codec(codec).build();
    queue.enqueueRaw(
        "t.Declined", "{}".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults());
    PumpTester.builder(
            ds,
            queue.driver(
                CommandHandlers.builder()
                    .onRaw(
                        "t.Declined",
                        (body, ctx) -> {
                          throw new IllegalStateException("declined");
                        })
                    .build()))
        .maxFailures(1)
        .build()
        .drainUntilIdle();
    queue.enqueueRaw("t.Due", "{}".getBytes(StandardCharsets.UTF_8), EnqueueOptions.defaults());

    JsonNode commands =
        json(runOnDb("status", "--only", "commands", "--schema", "tenant_c", "--json"));
    assertThat(commands.path("commands").path("byType").path("t.Due").path("due").asLong())
        .isEqualTo(1);
    assertThat(commands.path("commands").path("deadLetters").asLong()).isEqualTo(1);
    assertThat(json(runOnDb("status", "--only", "commands", "--json")).path("commands").toString())
        .doesNotContain("t.Due");
    Result letters = runOnDb("dead-letters", "list", "--schema", "tenant_c");
    assertThat(letters.code()).as(letters.err()).isZero();
    assertThat(letters.out()).contains("t.Declined", "declined", "1 shown, 1 in all");
    assertThat(runOnDb("dead-letters", "list").out()).contains("0 shown, 0 in all");
    Result retried =
        runOnDb("dead-letters", "retry", "--all-of-type", "t.Declined", "--schema", "tenant_c");
    assertThat(retried.code()).as(retried.err()).isZero();
    assertThat(retried.out()).contains("retried 1 dead letter");
    assertThat(db.queryLong("SELECT count(*) FROM tenant_c.commands")).isEqualTo(2);

    // The event store in tenant_e: a handler that has read one event.
    EventStore store = EventStore.builder(ds, codec).schema("tenant_e").build();
    Transactions.inNew(ds, "appending", tx -> store.append(tx, List.of(new Probed(1))));
    PumpTester.builder(
            ds,
            store.driver(
                "tenant-view", EventHandlers.builder().on(Probed.class, (e, ctx) -> {}).build()))
        .build()
        .drainUntilIdle();
    Result checkpoints = runOnDb("checkpoints", "show", "--schema", "tenant_e");
    assertThat(checkpoints.code()).as(checkpoints.err()).isZero();
    assertThat(checkpoints.out()).contains("tenant-view");
    assertThat(runOnDb("checkpoints", "show").out()).doesNotContain("tenant-view");
    JsonNode events = json(runOnDb("status", "--only", "events", "--schema", "tenant_e", "--json"));
    assertThat(events.path("eventHandlers").get(0).path("handlerKey").asText())
        .isEqualTo("tenant-view");
    Result reset =
        runOnDb("checkpoints", "reset", "--handler", "tenant-view", "--schema", "tenant_e");
    assertThat(reset.code()).as(reset.err()).isZero();
    assertThat(reset.out()).contains("reset tenant-view on 1 stream");

    // The balancer in tenant_b: one group with one message.
    MessageBalancer.builder(ds, "tenant-group")
        .schema("tenant_b")
        .build()
        .storeMessage("k1", new byte[] {1});
    Result groups = runOnDb("balancer", "stats", "--schema", "tenant_b");
    assertThat(groups.code()).as(groups.err()).isZero();
    assertThat(groups.out()).contains("tenant-group");
    assertThat(runOnDb("balancer", "stats").out()).doesNotContain("tenant-group");
    assertThat(
            runOnDb("balancer", "stats", "--group", "tenant-group", "--schema", "tenant_b").out())
        .contains("k1", "1 partitions, 1 messages");
    JsonNode balancer =
        json(runOnDb("status", "--only", "balancer", "--schema", "tenant_b", "--json"));
    assertThat(balancer.path("balancer").get(0).path("group").asText()).isEqualTo("tenant-group");

    // A schema name a driver refuses is a usage error, before any statement.
    for (String[] bad :
        List.of(
            new String[] {"dead-letters", "list", "--schema", "Bad-Name"},
            new String[] {"schedules", "list", "--schema", "Bad-Name"},
            new String[] {"schedules", "trigger", "nightly", "--schema", "pg_catalog"},
            new String[] {"checkpoints", "show", "--schema", "pg_catalog"},
            new String[] {"balancer", "stats", "--schema", "has space"},
            new String[] {
              "balancer", "confirm", "1", "00000000-0000-0000-0000-000000000000", "--schema", "Bad"
            },
            new String[] {"status", "--only", "commands", "--schema", "Bad"})) {
      Result r = runOnDb(bad);
      assertThat(r.code()).as(String.join(" ", bad) + ": " + r.err()).isEqualTo(2);
    }
  }

  @Test
  void theTopLevelHelpGivesEveryCommandAWholeSentenceOnOneLine() {
    Result help = run("--help");
    assertThat(help.code()).isZero();
    List<String> lines = help.out().lines().toList();
    CommandLine cli = new CommandLine(new PumpCli());
    int width = cli.getUsageHelpWidth();
    for (Map.Entry<String, CommandLine> sub : cli.getSubcommands().entrySet()) {
      // What picocli lists: the header's first line, else the description's.
      CommandLine.Model.UsageMessageSpec usage = sub.getValue().getCommandSpec().usageMessage();
      String[] listed = usage.header().length > 0 ? usage.header() : usage.description();
      assertThat(listed).as(sub.getKey()).isNotEmpty();
      String first = listed[0];
      assertThat(first).as(sub.getKey() + "'s first line").endsWith(".");
      // The command's name and its whole first sentence on one line of the listing.
      assertThat(lines)
          .as("pump --help on " + sub.getKey() + ":%n%s", help.out())
          .anyMatch(l -> l.strip().startsWith(sub.getKey() + " ") && l.endsWith(first));
    }
    assertThat(lines).allMatch(l -> l.length() <= width, "at most " + width + " characters");
  }
}
