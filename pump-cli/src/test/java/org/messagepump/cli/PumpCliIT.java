package org.messagepump.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.NewCommand;
import org.messagepump.commands.Schedule;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PumpCliIT {

  record Result(int code, String out, String err) {}

  private static TestDatabase db;

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
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

  @Test
  @Order(1)
  void versionNamesTheProjectVersionAndTheCommit() throws Exception {
    Result r = run("--version");
    assertThat(r.code()).isZero();
    Process git = new ProcessBuilder("git", "rev-parse", "--short=7", "HEAD").start();
    String commit =
        new String(git.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)
            .trim();
    String version = "messagepump \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?";
    if (git.waitFor() == 0) {
      assertThat(r.out().trim()).matches(version + " \\(commit " + commit + "\\)");
    } else { // built from a source tree without git: no commit to name
      assertThat(r.out().trim()).matches(version);
    }
  }

  @Test
  @Order(1)
  void migrateCreatesEverySchemaAndIsIdempotent() {
    Result r = runOnDb("migrate");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.out()).contains("migrated commands", "migrated events", "migrated balancer");
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM information_schema.schemata"
                    + " WHERE schema_name IN ('commandqueue', 'eventstream', 'balancer')"))
        .isEqualTo(3);
    assertThat(runOnDb("migrate", "--only", "balancer").code()).isZero();
  }

  @Test
  @Order(1)
  void migrateTakesASchemaAndGrantsGiveADmlRoleWhatItNeeds() throws Exception {
    assertThat(runOnDb("migrate", "--only", "commands", "--schema", "cli_app").code()).isZero();
    Result printed =
        runOnDb("grants", "--role", "cli_app_role", "--only", "commands", "--schema", "cli_app");
    assertThat(printed.code()).as(printed.err()).isZero();
    assertThat(printed.out())
        .contains("GRANT USAGE ON SCHEMA \"cli_app\" TO \"cli_app_role\";")
        .contains("\"cli_app\".\"commands\"");
    db.createLoginRole("cli_app_role", "secret");
    Result applied =
        runOnDb(
            "grants",
            "--role",
            "cli_app_role",
            "--only",
            "commands",
            "--schema",
            "cli_app",
            "--apply");
    assertThat(applied.code()).as(applied.err()).isZero();
    // The role enqueues and reads the depth with exactly those grants, and cannot drop a table.
    var ds = db.newDataSource("cli-role", 2, "cli_app_role", "secret");
    CommandQueue queue =
        CommandQueue.builder(ds)
            .schema("cli_app")
            .codec(
                org.messagepump.core.JsonMessageCodec.of(
                    org.messagepump.core.MessageTypes.builder()
                        .register(Ping.class, "cli.Ping")
                        .build()))
            .build();
    queue.enqueue(new Ping(1));
    assertThat(queue.operations().depth().of("cli.Ping").due()).isEqualTo(1);
    try (Connection c = ds.getConnection();
        var st = c.createStatement()) {
      assertThat(
              org.assertj.core.api.Assertions.catchThrowable(
                  () -> st.execute("DROP TABLE cli_app.commands")))
          .isNotNull();
    }
    // Bad arguments are usage errors, not stack traces.
    assertThat(runOnDb("grants", "--role", "x", "--schema", "s").code()).isEqualTo(2);
    assertThat(run("grants", "--role", "bad\u0000role").code()).isEqualTo(2);
  }

  record Ping(int n) {}

  @Test
  @Order(2)
  void demoFinishesWithItsInvariantsHolding() {
    Result r = runOnDb("demo", "--messages", "500");
    assertThat(r.code()).as(r.out() + r.err()).isZero();
    assertThat(r.out()).contains("All invariants hold.").doesNotContain("FAILED");
    // What the demo says it did is in the database.
    assertThat(db.queryLong("SELECT count(DISTINCT order_id) FROM demo.orders_view"))
        .isEqualTo(495);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isEqualTo(5);
  }

  @Test
  @Order(3)
  void statusJsonMatchesTheDatabase() throws Exception {
    CommandQueue queue =
        CommandQueue.create(
            db.dataSource(),
            org.messagepump.core.JsonMessageCodec.of(
                org.messagepump.core.MessageTypes.builder().build()));
    queue.enqueueRaw("ops.Probe", "{}".getBytes(), EnqueueOptions.defaults());
    queue.enqueueRaw(
        "ops.Probe",
        "{}".getBytes(),
        EnqueueOptions.defaults().withDelay(java.time.Duration.ofHours(1)));
    MessageBalancer.create(db.dataSource(), "ops-group").storeMessage("k1", new byte[] {1});
    Result r = runOnDb("status", "--json");
    assertThat(r.code()).as(r.err()).isZero();
    JsonNode status = new ObjectMapper().readTree(r.out());
    JsonNode probe = status.path("commands").path("byType").path("ops.Probe");
    assertThat(probe.path("due").asLong()).isEqualTo(1);
    assertThat(probe.path("delayed").asLong()).isEqualTo(1);
    assertThat(status.path("commands").path("deadLetters").asLong()).isEqualTo(5);
    List<String> handlers = new ArrayList<>();
    status.path("eventHandlers").forEach(h -> handlers.add(h.path("handlerKey").asText()));
    assertThat(handlers).contains(DemoScenario.VIEW_HANDLER, DemoScenario.TOTALS_HANDLER);
    status.path("eventHandlers").forEach(h -> assertThat(h.path("lag").asLong()).isZero());
    JsonNode group = null;
    for (JsonNode g : status.path("balancer")) {
      if (g.path("group").asText().equals("ops-group")) {
        group = g;
      }
    }
    assertThat(group).isNotNull();
    assertThat(group.path("partitions").asLong()).isEqualTo(1);
    assertThat(group.path("messages").asLong()).isEqualTo(1);
    Result text = runOnDb("status");
    assertThat(text.code()).isZero();
    assertThat(text.out()).contains("ops.Probe", "ops-group", DemoScenario.VIEW_HANDLER);
  }

  @Test
  @Order(4)
  void deadLetterOperationsChangeWhatTheySay() {
    Result list = runOnDb("dead-letters", "list");
    assertThat(list.code()).as(list.err()).isZero();
    assertThat(list.out()).contains("demo.PlaceOrder", "payment declined", "5 shown, 5 in all");
    String id = firstDeadLetterId();
    Result retry = runOnDb("dead-letters", "retry", id);
    assertThat(retry.code()).as(retry.err()).isZero();
    assertThat(retry.out()).contains("retried 1 dead letter");
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isEqualTo(4);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM commandqueue.commands WHERE message_id = '" + id + "'"))
        .isOne();
    Result young = runOnDb("dead-letters", "purge", "--older-than", "PT1H");
    assertThat(young.code()).as(young.err()).isZero();
    assertThat(young.out()).contains("purged 0 dead letters");
    Result badBatch = runOnDb("dead-letters", "purge", "--older-than", "PT1H", "--batch-size", "0");
    assertThat(badBatch.code()).isEqualTo(2);
    assertThat(badBatch.err()).contains("batchSize");
    db.execute(
        "UPDATE commandqueue.dead_letters SET parked_at = parked_at - interval '2 hours'"
            + " WHERE message_id = (SELECT message_id FROM commandqueue.dead_letters LIMIT 1)");
    Result purge = runOnDb("dead-letters", "purge", "--older-than", "PT1H", "--batch-size", "1");
    assertThat(purge.code()).as(purge.err()).isZero();
    assertThat(purge.out()).contains("purged 1 dead letter,");
    Result discard = runOnDb("dead-letters", "discard", "--all-of-type", "demo.PlaceOrder");
    assertThat(discard.code()).isZero();
    assertThat(discard.out()).contains("discarded 3 dead letters");
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.dead_letters")).isZero();
    Result missing = runOnDb("dead-letters", "retry", UUID.randomUUID().toString());
    assertThat(missing.code()).isEqualTo(1);
    assertThat(missing.err()).contains("no dead letter");
  }

  @Test
  @Order(4)
  void pauseAndResumeACommandTypeShowInStatus() throws Exception {
    Result pause = runOnDb("pause", "ops.Probe", "--reason", "downstream maintenance");
    assertThat(pause.code()).as(pause.err()).isZero();
    assertThat(pause.out()).contains("paused command type ops.Probe");
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.paused_types")).isOne();
    JsonNode status = new ObjectMapper().readTree(runOnDb("status", "--json").out());
    JsonNode paused = status.path("commands").path("pausedTypes");
    assertThat(paused).hasSize(1);
    assertThat(paused.get(0).path("type").asText()).isEqualTo("ops.Probe");
    assertThat(paused.get(0).path("reason").asText()).isEqualTo("downstream maintenance");
    assertThat(runOnDb("status").out()).contains("Paused command types", "downstream maintenance");
    Result again = runOnDb("pause", "ops.Probe");
    assertThat(again.out()).contains("already paused");
    Result resume = runOnDb("resume", "ops.Probe");
    assertThat(resume.code()).as(resume.err()).isZero();
    assertThat(resume.out()).contains("resumed command type ops.Probe");
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.paused_types")).isZero();
    assertThat(runOnDb("status").out()).doesNotContain("Paused command types");
    Result bad = runOnDb("pause", "");
    assertThat(bad.code()).isEqualTo(2);
    assertThat(bad.err()).contains("type");
  }

  @Test
  @Order(4)
  void scheduleOperationsChangeWhatTheySay() {
    CommandOperations.of(db.dataSource(), "cli_sched").migrate();
    CommandQueue queue =
        CommandQueue.builder(db.dataSource())
            .codec(
                org.messagepump.core.JsonMessageCodec.of(
                    org.messagepump.core.MessageTypes.builder().build()))
            .schema("cli_sched")
            .build();
    queue.defineSchedule(
        Schedule.cron(
            "ops-nightly",
            "0 30 2 * * *",
            "Europe/Berlin",
            NewCommand.raw("ops.Report", "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    Result list = runOnDb("schedules", "list", "--schema", "cli_sched");
    assertThat(list.code()).as(list.err()).isZero();
    assertThat(list.out())
        .contains("ops-nightly", "0 30 2 * * *", "Europe/Berlin", "ops.Report", "running")
        .contains("1 schedule");
    // Without --schema: the default schema, which has none.
    assertThat(runOnDb("schedules", "list").out()).contains("0 schedules");

    Result pause = runOnDb("schedules", "pause", "ops-nightly", "--schema", "cli_sched");
    assertThat(pause.code()).as(pause.err()).isZero();
    assertThat(pause.out()).contains("paused schedule ops-nightly");
    assertThat(queue.operations().schedules().find("ops-nightly").orElseThrow().paused()).isTrue();
    assertThat(runOnDb("schedules", "pause", "ops-nightly", "--schema", "cli_sched").out())
        .contains("already paused");
    assertThat(runOnDb("schedules", "list", "--schema", "cli_sched").out()).contains("paused");

    Result resume = runOnDb("schedules", "resume", "ops-nightly", "--schema", "cli_sched");
    assertThat(resume.code()).as(resume.err()).isZero();
    assertThat(resume.out()).contains("resumed schedule ops-nightly");
    assertThat(queue.operations().schedules().find("ops-nightly").orElseThrow().paused()).isFalse();

    Result trigger = runOnDb("schedules", "trigger", "ops-nightly", "--schema", "cli_sched");
    assertThat(trigger.code()).as(trigger.err()).isZero();
    assertThat(trigger.out()).contains("triggered schedule ops-nightly: command ");
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM cli_sched.commands WHERE message_type = 'ops.Report'"
                    + " AND headers->>'messagepump-triggered' = 'true'"))
        .isOne();

    Result absent = runOnDb("schedules", "trigger", "nope", "--schema", "cli_sched");
    assertThat(absent.code()).isEqualTo(1);
    assertThat(absent.err()).contains("no schedule named nope");
    assertThat(runOnDb("schedules", "resume", "nope", "--schema", "cli_sched").code()).isEqualTo(1);
    Result bad = runOnDb("schedules", "pause", "", "--schema", "cli_sched");
    assertThat(bad.code()).isEqualTo(2);
    assertThat(bad.err()).contains("name");
    assertThat(runOnDb("schedules", "list", "--schema", "Bad-Schema").code()).isEqualTo(2);
    assertThat(runOnDb("schedules").code()).isEqualTo(2);
  }

  @Test
  @Order(4)
  void pauseAndResumeAHandlerAndAGroupShowInStatus() throws Exception {
    Result handler = runOnDb("pause", "--handler", "ops-view", "--reason", "reindexing");
    assertThat(handler.code()).as(handler.err()).isZero();
    assertThat(handler.out()).contains("paused event handler ops-view");
    Result group = runOnDb("pause", "--group", "ops-group");
    assertThat(group.code()).as(group.err()).isZero();
    assertThat(group.out()).contains("paused balancer group ops-group");
    assertThat(db.queryLong("SELECT count(*) FROM eventstream.paused_handlers")).isOne();
    assertThat(db.queryLong("SELECT count(*) FROM balancer.paused_groups")).isOne();
    JsonNode status = new ObjectMapper().readTree(runOnDb("status", "--json").out());
    assertThat(status.path("pausedHandlers").get(0).path("handlerKey").asText())
        .isEqualTo("ops-view");
    assertThat(status.path("pausedHandlers").get(0).path("reason").asText())
        .isEqualTo("reindexing");
    assertThat(status.path("pausedGroups").get(0).path("group").asText()).isEqualTo("ops-group");
    assertThat(runOnDb("status").out())
        .contains("Paused event handlers", "reindexing", "Paused balancer groups", "ops-group");
    assertThat(runOnDb("pause", "--group", "ops-group").out()).contains("already paused");
    assertThat(runOnDb("resume", "--handler", "ops-view").out())
        .contains("resumed event handler ops-view");
    assertThat(runOnDb("resume", "--group", "ops-group").out())
        .contains("resumed balancer group ops-group");
    assertThat(runOnDb("resume", "--group", "ops-group").out()).contains("was not paused");
    assertThat(db.queryLong("SELECT count(*) FROM eventstream.paused_handlers")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM balancer.paused_groups")).isZero();
    assertThat(runOnDb("status").out())
        .doesNotContain("Paused event handlers")
        .doesNotContain("Paused balancer groups");
    Result both = runOnDb("pause", "ops.Probe", "--group", "g");
    assertThat(both.code()).isEqualTo(2);
    assertThat(both.err()).contains("exactly one");
    Result none = runOnDb("resume");
    assertThat(none.code()).isEqualTo(2);
    Result blank = runOnDb("pause", "--handler", " ");
    assertThat(blank.code()).isEqualTo(2);
    assertThat(blank.err()).contains("handlerKey");
  }

  @Test
  @Order(5)
  void checkpointOperationsChangeWhatTheySay() {
    long streams =
        db.queryLong(
            "SELECT count(*) FROM eventstream.handler_checkpoints WHERE handler_key = '"
                + DemoScenario.VIEW_HANDLER
                + "'");
    Result reset = runOnDb("checkpoints", "reset", "--handler", DemoScenario.VIEW_HANDLER);
    assertThat(reset.code()).as(reset.err()).isZero();
    assertThat(reset.out()).contains("reset " + DemoScenario.VIEW_HANDLER + " on " + streams);
    assertThat(
            db.queryLong(
                "SELECT max(checkpoint_offset) FROM eventstream.handler_checkpoints WHERE handler_key = '"
                    + DemoScenario.VIEW_HANDLER
                    + "'"))
        .isZero();
    long stream =
        db.queryLong(
            "SELECT min(stream_id) FROM eventstream.handler_checkpoints WHERE handler_key = '"
                + DemoScenario.VIEW_HANDLER
                + "'");
    Result set =
        runOnDb(
            "checkpoints",
            "set",
            "--handler",
            DemoScenario.VIEW_HANDLER,
            "--stream",
            Long.toString(stream),
            "--expected",
            "0",
            "--offset",
            "1");
    assertThat(set.code()).as(set.err()).isZero();
    assertThat(
            db.queryLong(
                "SELECT checkpoint_offset FROM eventstream.handler_checkpoints WHERE handler_key = '"
                    + DemoScenario.VIEW_HANDLER
                    + "' AND stream_id = "
                    + stream))
        .isOne();
    Result conflict =
        runOnDb(
            "checkpoints",
            "set",
            "--handler",
            DemoScenario.VIEW_HANDLER,
            "--stream",
            Long.toString(stream),
            "--expected",
            "0",
            "--offset",
            "2");
    assertThat(conflict.code()).isEqualTo(1);
    Result show = runOnDb("checkpoints", "show", "--handler", DemoScenario.VIEW_HANDLER);
    assertThat(show.code()).isZero();
    assertThat(show.out()).contains(DemoScenario.VIEW_HANDLER);
  }

  @Test
  @Order(5)
  void resetWithTruncateEmptiesTheReadModelInTheResetsTransaction() {
    String key = "cli-rebuild";
    db.execute("CREATE TABLE cli_rebuild_view (stream_id bigint, n bigint)");
    db.execute("CREATE VIEW cli_rebuild_shown AS SELECT * FROM cli_rebuild_view");
    db.execute("CREATE SCHEMA \"Cli Rebuild\"");
    db.execute("CREATE TABLE \"Cli Rebuild\".\"Other\" (n bigint)");
    long stream = db.queryLong("SELECT min(id) FROM eventstream.streams");
    String checkpoint =
        "SELECT checkpoint_offset FROM eventstream.handler_checkpoints WHERE handler_key = '"
            + key
            + "' AND stream_id = "
            + stream;
    Result set =
        runOnDb(
            "checkpoints",
            "set",
            "--handler",
            key,
            "--stream",
            Long.toString(stream),
            "--expected",
            "0",
            "--offset",
            "1");
    assertThat(set.code()).as(set.err()).isZero();
    db.execute("INSERT INTO cli_rebuild_view VALUES (1, 1), (2, 1)");
    db.execute("INSERT INTO \"Cli Rebuild\".\"Other\" VALUES (1)");

    // A name that is no table fails before anything is reset or emptied: exit 2.
    for (String bad : List.of("no_such_table", "cli_rebuild_shown", "a.b.c.d", " ")) {
      Result r =
          runOnDb(
              "checkpoints",
              "reset",
              "--handler",
              key,
              "--truncate",
              "cli_rebuild_view",
              "--truncate",
              bad);
      assertThat(r.code()).as(bad + ": " + r.err()).isEqualTo(2);
      assertThat(r.err()).contains("--truncate");
      assertThat(db.queryLong(checkpoint)).isOne();
      assertThat(db.queryLong("SELECT count(*) FROM cli_rebuild_view")).isEqualTo(2);
    }

    Result rebuilt =
        runOnDb(
            "checkpoints",
            "reset",
            "--handler",
            key,
            "--truncate",
            "cli_rebuild_view",
            "--truncate",
            "\"Cli Rebuild\".\"Other\"");
    assertThat(rebuilt.code()).as(rebuilt.err()).isZero();
    assertThat(rebuilt.out()).contains("reset " + key + " on 1 stream", "emptied");
    assertThat(db.queryLong(checkpoint)).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM cli_rebuild_view")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM \"Cli Rebuild\".\"Other\"")).isZero();
  }

  @Test
  @Order(6)
  void balancerOperationsChangeWhatTheySay() {
    Result stats = runOnDb("balancer", "stats");
    assertThat(stats.code()).as(stats.err()).isZero();
    assertThat(stats.out()).contains("ops-group");
    Result keys = runOnDb("balancer", "stats", "--group", "ops-group");
    assertThat(keys.out()).contains("k1", "1 partitions, 1 messages");
    Result stale = runOnDb("balancer", "confirm", "12345", UUID.randomUUID().toString());
    assertThat(stale.code()).isEqualTo(1);
    assertThat(stale.err()).contains("12345");
  }

  @Test
  void badArgumentsExitTwoWithUsage() {
    Result unknown = run("frobnicate");
    assertThat(unknown.code()).isEqualTo(2);
    assertThat(unknown.err()).contains("Unmatched argument", "frobnicate");
    Result noUrl = run("status");
    assertThat(noUrl.code()).isEqualTo(2);
    assertThat(noUrl.err()).contains("--jdbc-url is required");
    assertThat(run("demo", "--messages", "0").code()).isEqualTo(2);
    assertThat(run("demo", "--messages", "many").code()).isEqualTo(2);
    assertThat(
            run("migrate", "--only", "nothing", "--jdbc-url=jdbc:postgresql://localhost:1/x")
                .code())
        .isEqualTo(2);
  }

  @Test
  void anUnreachableDatabaseIsOneLineAndExitOne() {
    Result r = run("status", "--jdbc-url=jdbc:postgresql://127.0.0.1:1/nowhere", "--user=x");
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err().strip().lines().count()).isEqualTo(1);
    assertThat(r.err()).contains("cannot reach the database");
    Result verbose = run("status", "--jdbc-url=jdbc:postgresql://127.0.0.1:1/nowhere", "--verbose");
    assertThat(verbose.err()).contains("at org.");
  }

  private static String firstDeadLetterId() {
    try (Connection c = db.dataSource().getConnection();
        var s = c.createStatement();
        var rs =
            s.executeQuery(
                "SELECT message_id FROM commandqueue.dead_letters ORDER BY message_id LIMIT 1")) {
      rs.next();
      return rs.getString(1);
    } catch (java.sql.SQLException e) {
      throw new AssertionError(e);
    }
  }
}
