package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.testkit.PostgresExtension;

/**
 * The commands page's look-up of one pending command by message id or idempotency key, and its
 * cancel and reschedule actions: CSRF-checked, refused by a read-only console, confirmed by the
 * message id typed again (cancel), audited with their result, and refused with 409 while a handler
 * holds the command.
 */
@ExtendWith(PostgresExtension.class)
class ConsoleCommandLookupIT {

  static DataSource db;
  static ConsoleFixture fixture;
  static ConsoleServer open;
  static ConsoleServer readOnly;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    db = ds;
    fixture = new ConsoleFixture(ds); // the schemas, no pumps: commands stay where they are put
    open =
        ConsoleServer.start(
            ds, ConsoleConfig.builder().actorName("ops-lookup").build(), "127.0.0.1", 0);
    readOnly =
        ConsoleServer.start(ds, ConsoleConfig.builder().readOnly(true).build(), "127.0.0.1", 0);
  }

  @AfterAll
  static void stop() {
    for (ConsoleServer s : new ConsoleServer[] {open, readOnly}) {
      if (s != null) {
        s.close();
      }
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  private static UUID enqueue(String key) {
    return fixture
        .queue
        .enqueue(
            new ConsoleFixture.Charge(1, "customer-1", 100),
            EnqueueOptions.defaults().withIdempotencyKey(key))
        .messageId();
  }

  private static String find(Http h, String by, String what) throws Exception {
    HttpResponse<String> page =
        h.get("commands?by=" + by + "&find=" + URLEncoder.encode(what, StandardCharsets.UTF_8));
    assertThat(page.statusCode()).as(page.body()).isEqualTo(200);
    return page.body();
  }

  private static HttpResponse<String> post(Http h, String action, String... form) throws Exception {
    List<String> fields = new ArrayList<>(List.of("csrf", h.csrf()));
    fields.addAll(List.of(form));
    return h.post("actions/" + action, fields);
  }

  /** The latest audit row of {@code action} naming {@code target}: its targets and result. */
  private static List<String> audited(String action, UUID target) throws Exception {
    try (Connection c = db.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT targets, result FROM pumpconsole.audit"
                    + " WHERE action = ? AND ? = ANY(targets) ORDER BY id DESC LIMIT 1")) {
      ps.setString(1, action);
      ps.setString(2, target.toString());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return List.of();
        }
        Array targets = rs.getArray(1);
        List<String> out = new ArrayList<>(Arrays.asList((String[]) targets.getArray()));
        out.add(rs.getString(2));
        return out;
      }
    }
  }

  @Test
  void findsByKeyAndByIdAndSaysWhenThereIsNone() throws Exception {
    UUID id = enqueue("lookup-key-1");
    Http h = new Http(open.uri());
    String byKey = find(h, "key", "lookup-key-1");
    assertThat(byKey)
        .contains("id=\"found\" data-state=\"due\"", id.toString(), "lookup-key-1", "ops.Charge");
    assertThat(byKey).contains("actions/commands/cancel", "actions/commands/reschedule");
    assertThat(find(h, "id", id.toString())).contains("id=\"found\"", id.toString());
    assertThat(find(h, "key", "no-such-key")).contains("id=\"not-found\"");
    assertThat(find(h, "id", UUID.randomUUID().toString())).contains("id=\"not-found\"");
    assertThat(h.get("commands?by=id&find=not-a-uuid").statusCode()).isEqualTo(400);
    assertThat(h.get("commands?by=key&find=" + "x".repeat(600)).statusCode()).isEqualTo(400);
  }

  @Test
  void cancelNeedsTheTypedIdAndIsAudited() throws Exception {
    UUID id = enqueue("lookup-key-2");
    Http h = new Http(open.uri());
    // Without the CSRF token: refused, nothing changed.
    HttpResponse<String> forged =
        h.post(
            "actions/commands/cancel",
            List.of("id", id.toString(), "confirm", id.toString(), "csrf", "0".repeat(64)));
    assertThat(forged.statusCode()).isEqualTo(403);
    HttpResponse<String> unconfirmed =
        post(h, "commands/cancel", "id", id.toString(), "confirm", "yes");
    assertThat(unconfirmed.statusCode()).isEqualTo(400);
    assertThat(unconfirmed.body()).contains("type the message id");
    assertThat(fixture.queue.operations().pending().find(id)).isPresent();

    HttpResponse<String> done =
        post(h, "commands/cancel", "id", id.toString(), "confirm", id.toString());
    assertThat(done.statusCode()).isEqualTo(303);
    String location = done.headers().firstValue("Location").orElse("");
    assertThat(location).startsWith("/commands?by=id&find=" + id);
    assertThat(h.get(location.substring(1)).body()).contains("cancelled", "id=\"not-found\"");
    assertThat(fixture.queue.operations().pending().find(id)).isEmpty();
    assertThat(audited("commands.cancel", id)).containsExactly(id.toString(), "cancelled");
    // The key is kept: the cancelled command does not come back.
    assertThat(
            fixture
                .queue
                .enqueue(
                    new ConsoleFixture.Charge(1, "customer-1", 100),
                    EnqueueOptions.defaults().withIdempotencyKey("lookup-key-2"))
                .isDuplicate())
        .isTrue();

    HttpResponse<String> again =
        post(h, "commands/cancel", "id", id.toString(), "confirm", id.toString());
    assertThat(again.statusCode()).isEqualTo(404);
  }

  @Test
  void rescheduleMovesItAndABadTimeIsRefused() throws Exception {
    UUID id = enqueue("lookup-key-3");
    Http h = new Http(open.uri());
    HttpResponse<String> bad = post(h, "commands/reschedule", "id", id.toString(), "at", "soon");
    assertThat(bad.statusCode()).isEqualTo(400);
    HttpResponse<String> far =
        post(h, "commands/reschedule", "id", id.toString(), "at", "+999999-01-01T00:00:00Z");
    assertThat(far.statusCode()).isEqualTo(400);
    assertThat(far.body()).contains("dueAt");
    HttpResponse<String> done =
        post(h, "commands/reschedule", "id", id.toString(), "at", "2030-01-31T08:00:00Z");
    assertThat(done.statusCode()).isEqualTo(303);
    assertThat(find(h, "id", id.toString())).contains("data-state=\"scheduled\"");
    assertThat(fixture.queue.operations().pending().find(id).orElseThrow().dueAt())
        .isEqualTo(java.time.Instant.parse("2030-01-31T08:00:00Z"));
    assertThat(audited("commands.reschedule", id))
        .containsExactly(id.toString(), "rescheduled to 2030-01-31T08:00:00Z");
  }

  @Test
  void aCommandAHandlerHoldsIsRefusedWith409AndAudited() throws Exception {
    UUID id = enqueue("lookup-key-4");
    Http h = new Http(open.uri());
    String csrf = h.csrf();
    try (Connection handling = db.getConnection()) {
      // What a transactional pump's claim does: the row deleted in a handling transaction.
      handling.setAutoCommit(false);
      try (PreparedStatement ps =
          handling.prepareStatement("DELETE FROM commandqueue.commands WHERE message_id = ?")) {
        ps.setObject(1, id);
        assertThat(ps.executeUpdate()).isOne();
      }
      HttpResponse<String> r =
          h.post(
              "actions/commands/cancel",
              List.of("csrf", csrf, "id", id.toString(), "confirm", id.toString()));
      assertThat(r.statusCode()).isEqualTo(409);
      assertThat(r.body()).contains("held by a running handler");
      HttpResponse<String> move =
          h.post(
              "actions/commands/reschedule",
              List.of("csrf", csrf, "id", id.toString(), "at", "2030-01-31T08:00:00Z"));
      assertThat(move.statusCode()).isEqualTo(409);
      handling.rollback();
    }
    assertThat(fixture.queue.operations().pending().find(id)).isPresent();
    assertThat(h.get("audit").body()).contains("commands.cancel", "refused 409");
  }

  @Test
  void aReadOnlyConsoleShowsTheCommandButNoActions() throws Exception {
    UUID id = enqueue("lookup-key-5");
    Http h = new Http(readOnly.uri());
    String page = find(h, "key", "lookup-key-5");
    assertThat(page).contains("id=\"found\"", id.toString()).doesNotContain("method=\"post\"");
    HttpResponse<String> r =
        post(h, "commands/cancel", "id", id.toString(), "confirm", id.toString());
    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(fixture.queue.operations().pending().find(id)).isPresent();
  }
}
