package org.messagepump.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** {@code pump commands find|cancel|reschedule}: what they print, change and exit with. */
@ExtendWith(PostgresExtension.class)
class CommandsCommandIT {

  record Result(int code, String out, String err) {}

  private static TestDatabase db;
  private static CommandQueue queue;

  @BeforeAll
  static void database(TestDatabase database) {
    db = database;
    CommandOperations.of(db.dataSource()).migrate();
    queue =
        CommandQueue.create(db.dataSource(), JsonMessageCodec.of(MessageTypes.builder().build()));
  }

  @BeforeEach
  void empty() throws Exception {
    try (Connection c = db.dataSource().getConnection();
        var s = c.createStatement()) {
      s.execute("TRUNCATE commandqueue.commands, commandqueue.idempotency_keys");
    }
  }

  private static Result run(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--jdbc-url=" + db.jdbcUrl());
    all.add("--user=" + db.server().user());
    all.add("--password=" + db.server().password());
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code =
        PumpCli.execute(new PrintWriter(out), new PrintWriter(err), all.toArray(String[]::new));
    return new Result(code, out.toString(), err.toString());
  }

  private static UUID enqueue(String key, EnqueueOptions options) {
    return queue
        .enqueueRaw(
            "ops.Probe",
            "{}".getBytes(StandardCharsets.UTF_8),
            key == null ? options : options.withIdempotencyKey(key))
        .messageId();
  }

  @Test
  void findShowsTheCommandByIdAndByKey() {
    UUID id = enqueue("order-7", EnqueueOptions.defaults().withCorrelationId("corr-1"));
    Result byId = run("commands", "find", "--id", id.toString());
    assertThat(byId.code()).as(byId.err()).isZero();
    assertThat(byId.out()).contains(id.toString(), "ops.Probe", "corr-1", "due");
    Result byKey = run("commands", "find", "--key", "order-7");
    assertThat(byKey.code()).as(byKey.err()).isZero();
    assertThat(byKey.out()).contains(id.toString(), "'order-7'");

    Result missing = run("commands", "find", "--key", "no-such");
    assertThat(missing.code()).isEqualTo(1);
    assertThat(missing.err()).contains("no pending command with idempotency key 'no-such'");
  }

  @Test
  void rescheduleMovesItAndCancelDeletesIt() {
    UUID id = enqueue("order-8", EnqueueOptions.defaults());
    Result at = run("commands", "reschedule", "--key", "order-8", "--at", "2030-01-31T08:00:00Z");
    assertThat(at.code()).as(at.err()).isZero();
    assertThat(at.out()).contains("rescheduled", "2030-01-31T08:00:00Z");
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM commandqueue.commands"
                    + " WHERE deliver_at = '2030-01-31T08:00:00Z'"))
        .isOne();
    assertThat(run("commands", "find", "--id", id.toString()).out()).contains("scheduled");
    Result in = run("commands", "reschedule", "--id", id.toString(), "--in", "PT1H");
    assertThat(in.code()).as(in.err()).isZero();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM commandqueue.commands"
                    + " WHERE deliver_at BETWEEN now() + interval '50 minutes'"
                    + " AND now() + interval '70 minutes'"))
        .isOne();

    Result cancel = run("commands", "cancel", "--id", id.toString());
    assertThat(cancel.code()).as(cancel.err()).isZero();
    assertThat(cancel.out()).contains("cancelled the command with message id " + id);
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isZero();
    // The key is kept: it still names the (cancelled) command.
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.idempotency_keys")).isOne();
    Result again = run("commands", "cancel", "--key", "order-8");
    assertThat(again.code()).isEqualTo(1);
    assertThat(again.err()).contains("no pending command");
    Result gone = run("commands", "reschedule", "--id", id.toString(), "--in", "PT1M");
    assertThat(gone.code()).isEqualTo(1);
  }

  @Test
  void aHeldCommandExitsThreeAndStays() throws Exception {
    UUID id = enqueue(null, EnqueueOptions.defaults());
    try (Connection handling = db.dataSource().getConnection()) {
      // What a transactional pump's claim does: the row locked (and deleted) in an open
      // transaction.
      handling.setAutoCommit(false);
      try (var ps =
          handling.prepareStatement("DELETE FROM commandqueue.commands WHERE message_id = ?")) {
        ps.setObject(1, id);
        assertThat(ps.executeUpdate()).isOne();
      }
      // A plain read: the delete is not committed, so the command still reads as due.
      assertThat(run("commands", "find", "--id", id.toString()).out()).contains("due");
      Result cancel = run("commands", "cancel", "--id", id.toString());
      assertThat(cancel.code()).isEqualTo(3);
      assertThat(cancel.err()).contains("held by a running handler", "nothing changed");
      Result move = run("commands", "reschedule", "--id", id.toString(), "--in", "PT1H");
      assertThat(move.code()).isEqualTo(3);
      handling.rollback();
    }
    assertThat(db.queryLong("SELECT count(*) FROM commandqueue.commands")).isOne();

    try (Connection c = db.dataSource().getConnection();
        var s = c.createStatement()) {
      s.execute(
          "UPDATE commandqueue.commands SET leased_by = '42@host', lease_token = 1,"
              + " deliver_at = clock_timestamp() + interval '1 minute'");
    }
    Result leased = run("commands", "find", "--id", id.toString());
    assertThat(leased.out()).contains("leased by 42@host until");
    assertThat(run("commands", "cancel", "--id", id.toString()).code()).isEqualTo(3);
  }

  @Test
  void badArgumentsExitTwo() {
    UUID id = UUID.randomUUID();
    for (String[] bad :
        List.of(
            new String[] {"commands", "find"},
            new String[] {"commands", "find", "--id", id.toString(), "--key", "k"},
            new String[] {"commands", "find", "--id", "not-a-uuid"},
            new String[] {"commands", "cancel", "--key", "x".repeat(600)},
            new String[] {"commands", "cancel", "--key", ""},
            new String[] {"commands", "reschedule", "--id", id.toString()},
            new String[] {"commands", "reschedule", "--id", id.toString(), "--at", "tomorrow"},
            new String[] {"commands", "reschedule", "--id", id.toString(), "--in", "-PT1H"},
            new String[] {"commands", "cancel", "--id", id.toString(), "--schema", "Bad-Name"})) {
      Result r = run(bad);
      assertThat(r.code()).as(String.join(" ", bad) + ": " + r.err()).isEqualTo(2);
    }
    assertThat(run("commands", "cancel", "--key", "x".repeat(600)).err())
        .contains("idempotencyKey");
    assertThat(
            run("commands", "reschedule", "--id", id.toString(), "--at", "+999999-01-01T00:00:00Z")
                .err())
        .contains("dueAt");
  }
}
