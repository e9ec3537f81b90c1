package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.Tx;
import org.messagepump.testkit.PostgresExtension;

/**
 * The job view: the queue's queued, scheduled, failing and parked work a page at a time; search by
 * message id, idempotency key, stream key, balancer key and message id; a command's detail with its
 * attempts; pauses shown, paused and resumed through the audit; a bulk action's preview; hostile
 * values inert; a read-only console without buttons. No pumps run: work stays where it is put.
 */
@ExtendWith(PostgresExtension.class)
class ConsoleJobsIT {

  static final String HOSTILE = "<script>alert(1)</script>\n\"'&";
  static final String HOSTILE_TYPE = "ops.<img src=x onerror=alert(3)>";

  static DataSource db;
  static ConsoleFixture fixture;
  static ConsoleServer open;
  static ConsoleServer readOnly;
  static UUID scheduled;
  static UUID failing;
  static UUID keyed;
  static UUID dead;
  static long mailMessage;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    db = ds;
    fixture = new ConsoleFixture(ds);
    for (int i = 0; i < 60; i++) {
      fixture.queue.enqueue(new ConsoleFixture.Charge(i, "c", 1));
    }
    keyed =
        fixture
            .queue
            .enqueue(
                new ConsoleFixture.Charge(100, "c", 1),
                EnqueueOptions.defaults().withIdempotencyKey("job-key-" + HOSTILE))
            .messageId();
    scheduled =
        fixture
            .queue
            .enqueue(
                new ConsoleFixture.Charge(101, "c", 1),
                EnqueueOptions.defaults().withDelay(Duration.ofHours(2)))
            .messageId();
    failing = fixture.queue.enqueue(new ConsoleFixture.Charge(102, "c", 1)).messageId();
    sql(
        "UPDATE commandqueue.commands SET failures = 2,"
            + " deliver_at = clock_timestamp() + interval '1 minute' WHERE message_id = ?",
        failing);
    // 60 commands of two types due at the same instant: their order is by id alone, and a page
    // boundary falls among them.
    sql(
        "INSERT INTO commandqueue.commands (message_id, message_type, payload, deliver_at)"
            + " SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN 'ops.TieA' ELSE 'ops.TieB' END,"
            + " '\\x7b7d'::bytea, timestamptz '2026-01-01 00:00:00+00'"
            + " FROM generate_series(1, 60) AS i");
    dead = UUID.randomUUID();
    sql(
        "INSERT INTO commandqueue.dead_letters (message_id, message_type, payload, failures,"
            + " last_error, enqueued_at) VALUES (?, ?, '\\x7b7d'::bytea, 3, ?, now())",
        dead,
        HOSTILE_TYPE,
        "declined " + HOSTILE + "\n\tat ops.Charges.handle");
    for (int i = 0; i < 3; i++) {
      sql(
          "INSERT INTO commandqueue.dead_letters (message_id, message_type, payload, failures,"
              + " last_error, enqueued_at) VALUES (gen_random_uuid(), ?, '\\x7b7d'::bytea, 1,"
              + " 'x', now())",
          HOSTILE_TYPE);
    }

    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      fixture.events.appendToKey(
          Tx.of(c), "order-" + HOSTILE, 0, List.of(new ConsoleFixture.Charged(1, 1)));
      c.commit();
    }
    sql(
        "INSERT INTO eventstream.handler_checkpoints (handler_key, stream_id, checkpoint_offset,"
            + " failures, parked_at, parked_reason) SELECT ?, stream_id, 0, 3, now(), ?"
            + " FROM eventstream.stream_keys WHERE stream_key = ?",
        ConsoleFixture.LEDGER,
        "rejected " + HOSTILE,
        "order-" + HOSTILE);
    sql("INSERT INTO eventstream.handlers (handler_key) VALUES (?)", ConsoleFixture.LEDGER);

    mailMessage = fixture.mail.storeMessage("key-" + HOSTILE, "m".getBytes(StandardCharsets.UTF_8));
    fixture.mail.storeMessage("key-" + HOSTILE, "n".getBytes(StandardCharsets.UTF_8));
    sql("UPDATE balancer.messages SET attempts = 4 WHERE id = ?", mailMessage);
    sql(
        "UPDATE balancer.partitions SET parked_at = now(), parked_reason = ?, failures = 4"
            + " WHERE partition_key = ?",
        "full " + HOSTILE,
        "key-" + HOSTILE);

    open =
        ConsoleServer.start(
            ds, ConsoleConfig.builder().actorName("ops-jobs").build(), "127.0.0.1", 0);
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

  private static void sql(String statement, Object... values) throws Exception {
    try (Connection c = db.getConnection();
        PreparedStatement ps = c.prepareStatement(statement)) {
      for (int i = 0; i < values.length; i++) {
        ps.setObject(i + 1, values[i]);
      }
      ps.execute();
    }
  }

  private static String page(Http h, String path) throws Exception {
    HttpResponse<String> r = h.get(path);
    assertThat(r.statusCode()).as(path + ": " + r.body()).isEqualTo(200);
    assertThat(r.body()).doesNotContain("<script>alert", "<img src=x");
    return r.body();
  }

  private static String q(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  private static String b64(String value) {
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString(value.getBytes(StandardCharsets.UTF_8));
  }

  private static HttpResponse<String> post(Http h, String action, String... form) throws Exception {
    List<String> fields = new ArrayList<>(List.of("csrf", h.csrf()));
    fields.addAll(List.of(form));
    return h.post("actions/" + action, fields);
  }

  private static final Pattern NEXT = Pattern.compile("id=\"next-jobs\" href=\"/([^\"]+)\"");
  private static final Pattern ROW = Pattern.compile("<tr id=\"job-([0-9a-f-]{36})\"");

  @Test
  void listsEachStateAPageAtATime() throws Exception {
    Http h = new Http(open.uri());
    Set<String> queued = new LinkedHashSet<>();
    String path = "jobs?driver=commands&state=queued";
    int pages = 0;
    while (path != null) {
      String body = page(h, path.replace("&amp;", "&"));
      Matcher rows = ROW.matcher(body);
      while (rows.find()) {
        assertThat(queued.add(rows.group(1))).as("listed once: " + rows.group(1)).isTrue();
      }
      Matcher next = NEXT.matcher(body);
      path = next.find() ? next.group(1) : null;
      pages++;
    }
    assertThat(pages).isEqualTo(3);
    assertThat(queued).hasSize(121).contains(keyed.toString());
    List<String> tied = new ArrayList<>();
    try (Connection c = db.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT message_id::text FROM commandqueue.commands"
                    + " WHERE message_type LIKE 'ops.Tie_' ORDER BY message_id");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        tied.add(rs.getString(1));
      }
    }
    // The tied commands come first (the earliest rank), in PostgreSQL's order of their ids.
    assertThat(new ArrayList<>(queued).subList(0, 60)).containsExactlyElementsOf(tied);
    assertThat(queued).doesNotContain(scheduled.toString(), failing.toString());

    assertThat(page(h, "jobs?driver=commands&state=scheduled"))
        .contains("job-" + scheduled, "job-" + failing)
        .doesNotContain("job-" + keyed);
    assertThat(page(h, "jobs?driver=commands&state=failing"))
        .contains("job-" + failing)
        .doesNotContain("job-" + scheduled, "job-" + keyed);
    String parked = page(h, "jobs?driver=commands&state=parked&type=" + q(HOSTILE_TYPE));
    assertThat(parked)
        .contains("job-" + dead, "ops.&lt;img src=x onerror=alert(3)&gt;", "/jobs/preview");
    assertThat(page(h, "jobs?driver=commands&state=queued&type=" + q(HOSTILE_TYPE)))
        .contains("None.");

    assertThat(h.get("jobs?driver=commands&state=stuck").statusCode()).isEqualTo(400);
    assertThat(h.get("jobs?driver=nope").statusCode()).isEqualTo(400);
    assertThat(h.get("jobs?driver=commands&after_rank=yesterday&after_id=x").statusCode())
        .isEqualTo(400);
  }

  @Test
  void findsACommandByIdOrKeyAndShowsItsAttempts() throws Exception {
    Http h = new Http(open.uri());
    assertThat(page(h, "jobs?driver=commands&by=key&find=" + q("job-key-" + HOSTILE)))
        .contains("id=\"command\" data-state=\"due\"", keyed.toString());
    assertThat(page(h, "jobs?driver=commands&by=id&find=" + failing))
        .contains("data-state=\"scheduled\"", "attempts failed</th><td>2<");
    String detail = page(h, "jobs/command?id=" + dead);
    assertThat(detail)
        .contains(
            "data-state=\"parked\"",
            "attempts failed</th><td>3<",
            "declined &lt;script&gt;alert(1)&lt;/script&gt;",
            "at ops.Charges.handle",
            "actions/dead-letters/retry",
            "actions/dead-letters/discard");
    assertThat(page(h, "jobs/command?id=" + scheduled)).contains("actions/commands/cancel");
    assertThat(page(h, "jobs?driver=commands&by=id&find=" + UUID.randomUUID()))
        .contains("id=\"not-found\"");
    assertThat(page(h, "jobs?driver=commands&by=key&find=nobody")).contains("id=\"not-found\"");
    assertThat(h.get("jobs/command?id=" + UUID.randomUUID()).statusCode()).isEqualTo(404);
    assertThat(h.get("jobs/command?id=not-an-id").statusCode()).isEqualTo(400);
    assertThat(h.get("jobs?driver=commands&by=id&find=%00").statusCode()).isEqualTo(400);

    String readOnlyDetail = page(new Http(readOnly.uri()), "jobs/command?id=" + dead);
    assertThat(readOnlyDetail).contains("declined").doesNotContain("actions/");
  }

  @Test
  void findsAStreamAndABalancerKeyByTheirKeys() throws Exception {
    Http h = new Http(open.uri());
    String stream = page(h, "jobs?driver=events&key=" + q("order-" + HOSTILE));
    assertThat(stream)
        .contains(
            "id=\"stream-handlers\"",
            ConsoleFixture.LEDGER,
            "rejected &lt;script&gt;",
            "actions/streams/resume",
            "order-&lt;script&gt;alert(1)&lt;/script&gt;");
    assertThat(page(h, "jobs?driver=events&key=unknown")).contains("id=\"not-found\"");

    String key =
        page(
            h, "jobs?driver=balancer&group=" + ConsoleFixture.MAIL + "&key=" + q("key-" + HOSTILE));
    assertThat(key)
        .contains("id=\"messages\"", "message-" + mailMessage, "actions/keys/unpark", "full &lt;")
        .containsPattern("id=\"message-" + mailMessage + "\">.*?<td class=\"num warn\">4<");
    fixture.mail.storeMessage("waiting-key", "w".getBytes(StandardCharsets.UTF_8));
    fixture.mail.storeMessage("fine-key", "f".getBytes(StandardCharsets.UTF_8));
    sql(
        "UPDATE balancer.partitions SET failures = 1,"
            + " resume_at = clock_timestamp() + interval '1 hour' WHERE partition_key = ?",
        "waiting-key");
    String failingKeys = page(h, "jobs?driver=balancer");
    assertThat(failingKeys)
        .contains("id=\"failing-keys\"", "key-&lt;script&gt;", "waiting-key")
        .doesNotContain("fine-key");
    assertThat(page(h, "jobs?driver=balancer&group=" + ConsoleFixture.MAIL + "&after_key=waiting"))
        .contains("waiting-key")
        .doesNotContain("key-&lt;script&gt;");
    assertThat(page(h, "jobs?driver=balancer&message=" + mailMessage))
        .contains("id=\"key\"", "message-" + mailMessage);
    assertThat(page(h, "jobs?driver=balancer&message=999999999")).contains("id=\"not-found\"");
    assertThat(h.get("jobs?driver=balancer&message=abc").statusCode()).isEqualTo(400);
    assertThat(h.get("jobs?driver=balancer&group=nope&key=k").statusCode()).isEqualTo(404);
  }

  @Test
  void pausesAreShownPausedAndResumedThroughTheAudit() throws Exception {
    Http h = new Http(open.uri());
    assertThat(page(h, "jobs?driver=commands")).contains("Nothing paused.", "actions/pauses/pause");

    HttpResponse<String> forged =
        h.post(
            "actions/pauses/pause",
            List.of(
                "driver",
                "commands",
                "name64",
                b64(ConsoleFixture.CHARGE),
                "csrf",
                "0".repeat(64)));
    assertThat(forged.statusCode()).isEqualTo(403);
    assertThat(fixture.queue.operations().pausedTypes()).isEmpty();

    HttpResponse<String> paused =
        post(
            h,
            "pauses/pause",
            "driver",
            "commands",
            "name64",
            b64(ConsoleFixture.CHARGE),
            "reason",
            "maintenance " + HOSTILE);
    assertThat(paused.statusCode()).as(paused.body()).isEqualTo(303);
    assertThat(fixture.queue.operations().pausedTypes()).hasSize(1);
    String shown = page(h, "jobs?driver=commands");
    assertThat(shown).contains("maintenance &lt;script&gt;", "actions/pauses/resume");
    assertThat(
            post(h, "pauses/pause", "driver", "commands", "name64", b64(ConsoleFixture.CHARGE))
                .statusCode())
        .isEqualTo(409);
    assertThat(
            post(h, "pauses/resume", "driver", "commands", "name64", b64(ConsoleFixture.CHARGE))
                .statusCode())
        .isEqualTo(303);
    assertThat(fixture.queue.operations().pausedTypes()).isEmpty();

    assertThat(
            post(h, "pauses/pause", "driver", "events", "name64", b64(ConsoleFixture.LEDGER))
                .statusCode())
        .isEqualTo(303);
    assertThat(fixture.events.operations().pausedHandlers()).hasSize(1);
    assertThat(page(h, "jobs?driver=events")).contains("actions/pauses/resume");
    assertThat(
            post(h, "pauses/resume", "driver", "events", "name64", b64(ConsoleFixture.LEDGER))
                .statusCode())
        .isEqualTo(303);
    assertThat(
            post(h, "pauses/pause", "driver", "balancer", "name64", b64(ConsoleFixture.MAIL))
                .statusCode())
        .isEqualTo(303);
    assertThat(fixture.mail.operations().isPaused(fixture.mail.group())).isTrue();
    assertThat(
            post(h, "pauses/resume", "driver", "balancer", "name64", b64(ConsoleFixture.MAIL))
                .statusCode())
        .isEqualTo(303);
    assertThat(BalancerOperations.of(db).pausedGroups()).isEmpty();

    assertThat(
            post(h, "pauses/pause", "driver", "events", "name64", b64("no-handler")).statusCode())
        .isEqualTo(404);
    assertThat(post(h, "pauses/pause", "driver", "queues", "name64", b64("x")).statusCode())
        .isEqualTo(400);

    List<String> audited = new ArrayList<>();
    try (Connection c = db.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT action || ' ' || targets[1] || ' ' || result FROM pumpconsole.audit"
                    + " WHERE actor = 'ops-jobs' AND action LIKE 'pauses.%' ORDER BY id");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        audited.add(rs.getString(1));
      }
    }
    assertThat(audited)
        .startsWith(
            "pauses.pause type " + ConsoleFixture.CHARGE + " paused: maintenance " + HOSTILE)
        .contains(
            "pauses.resume type " + ConsoleFixture.CHARGE + " resumed",
            "pauses.pause handler " + ConsoleFixture.LEDGER + " paused",
            "pauses.resume group " + ConsoleFixture.MAIL + " resumed");

    Http ro = new Http(readOnly.uri());
    assertThat(page(ro, "jobs?driver=commands")).doesNotContain("actions/pauses");
    assertThat(post(ro, "pauses/pause", "driver", "commands", "name64", b64("x")).statusCode())
        .isEqualTo(403);
  }

  @Test
  void aBulkActionShowsWhatItWillTouchBeforeItRuns() throws Exception {
    Http h = new Http(open.uri());
    String preview = page(h, "jobs/preview?action=discard&type=" + q(HOSTILE_TYPE));
    assertThat(preview)
        .contains(
            "data-count=\"4\"",
            "id=\"preview-count\">4<",
            dead.toString(),
            "actions/dead-letters/discard",
            "type64",
            "Discard all 4");
    assertThat(page(h, "commands")).contains("/jobs/preview?action=retry&amp;type=");
    assertThat(h.get("jobs/preview?action=explode&type=x").statusCode()).isEqualTo(400);
    assertThat(h.get("jobs/preview?action=retry&type=nothing.here").statusCode()).isEqualTo(404);
    assertThat(page(new Http(readOnly.uri()), "jobs/preview?action=retry&type=" + q(HOSTILE_TYPE)))
        .contains("read-only")
        .doesNotContain("actions/");
  }
}
