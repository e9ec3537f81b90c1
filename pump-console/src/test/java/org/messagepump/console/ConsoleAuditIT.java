package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.DeadLetter;
import org.messagepump.testkit.PostgresExtension;

/**
 * The audit trail: who (named tokens, a trusted proxy's header), from where, every target, written
 * with the action or not at all; refused strangers never in it; hostile keys cannot forge lines.
 */
@ExtendWith(PostgresExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleAuditIT {

  static final String ALICE = "alice-token-0123456789";
  static final String BOB = "bob-token-0123456789";
  static final String FORGED_KEY =
      ConsoleFixture.FAILING_PREFIX
          + "k\nconsole audit: id=1 actor=\"root\" action=\"keys.unpark\" result=\"ok\"";

  static DataSource db;
  static ConsoleFixture fixture;
  static ConsoleServer tokened;
  static ConsoleServer proxied;
  static ConsoleServer open;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    db = ds;
    fixture = new ConsoleFixture(ds).start(30);
    fixture.mail.storeMessage(FORGED_KEY, "x".getBytes(StandardCharsets.UTF_8));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                fixture.mail.operations().parkedKeys(fixture.mail.group()).containsKey(FORGED_KEY));
    tokened =
        ConsoleServer.start(
            ds,
            ConsoleConfig.builder().operator("alice", ALICE).operator("bob", BOB).build(),
            "127.0.0.1",
            0);
    proxied =
        ConsoleServer.start(
            ds,
            ConsoleConfig.builder().identityHeader("X-Auth-User", "127.0.0.1").build(),
            "127.0.0.1",
            0);
    open = ConsoleServer.start(ds, ConsoleConfig.defaults(), "127.0.0.1", 0);
  }

  @AfterAll
  static void stop() {
    for (ConsoleServer s : new ConsoleServer[] {tokened, proxied, open}) {
      if (s != null) {
        s.close();
      }
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  /** Audit rows, newest first: actor, source, action, targets, result. */
  static List<List<Object>> rows() throws Exception {
    List<List<Object>> out = new ArrayList<>();
    try (Connection c = db.getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT actor, source, action, targets, result FROM pumpconsole.audit"
                    + " ORDER BY id DESC")) {
      while (rs.next()) {
        Array targets = rs.getArray(4);
        out.add(
            List.of(
                rs.getString(1),
                rs.getString(2),
                rs.getString(3),
                Arrays.asList((String[]) targets.getArray()),
                rs.getString(5)));
      }
    }
    return out;
  }

  static void sql(String statement) throws Exception {
    try (Connection c = db.getConnection();
        Statement st = c.createStatement()) {
      st.execute(statement);
    }
  }

  static HttpResponse<String> post(Http h, String action, String... form) throws Exception {
    List<String> fields = new ArrayList<>(List.of("csrf", h.csrf()));
    fields.addAll(List.of(form));
    return h.post("actions/" + action, fields);
  }

  static Http login(ConsoleServer s, String token) throws Exception {
    Http h = new Http(s.uri());
    HttpResponse<String> r = h.get("commands?token=" + token);
    assertThat(r.statusCode()).isEqualTo(302);
    assertThat(r.headers().allValues("Set-Cookie"))
        .anyMatch(c -> c.startsWith("pump_console_login=") && c.contains("Max-Age=43200"));
    return h;
  }

  @Test
  @Order(1)
  void eachOperatorIsAuditedUnderTheirOwnNameAndAFloodOfStrangersPushesNothingOut()
      throws Exception {
    DeadLetter letter = fixture.queue.operations().deadLetters().list(1).get(0);
    Http alice = login(tokened, ALICE);
    assertThat(
            post(alice, "dead-letters/discard", "id", letter.messageId().toString()).statusCode())
        .isEqualTo(303);
    assertThat(rows().get(0))
        .containsExactly(
            "alice",
            "127.0.0.1",
            "dead-letters.discard",
            List.of(letter.messageId().toString()),
            "discarded 1");
    Http bob = new Http(tokened.uri());
    assertThat(bob.get("audit", "Authorization", "Bearer " + BOB).body())
        .contains("id=\"actor\">bob<");

    int before = rows().size();
    // 505 refused POSTs: no token, and (open console) no CSRF token.
    Http stranger = new Http(tokened.uri());
    Http page = new Http(open.uri());
    for (int i = 0; i < 505; i++) {
      Http h = i % 2 == 0 ? stranger : page;
      HttpResponse<String> r =
          h.post("actions/dead-letters/discard", List.of("type", ConsoleFixture.CHARGE));
      assertThat(r.statusCode()).isIn(401, 403);
    }
    assertThat(rows()).hasSize(before);
    assertThat(rows()).noneMatch(row -> row.get(0).equals("anonymous"));
    String audit = alice.get("audit").body();
    assertThat(audit).contains("dead-letters.discard", letter.messageId().toString(), "alice");
    assertThat(Long.parseLong(audit.replaceAll("(?s).*<span id=\"refused\">(\\d+)<.*", "$1")))
        .isGreaterThanOrEqualTo(253);
  }

  @Test
  @Order(2)
  void aTrustedProxyNamesTheOperatorAndTheClientItSaw() throws Exception {
    Http h = new Http(proxied.uri());
    String[] as = {"X-Auth-User", "carol", "X-Forwarded-For", "203.0.113.9"};
    String csrf =
        h.get("commands", as)
            .body()
            .replaceAll("(?s).*name=\"csrf\" content=\"([0-9a-f]{64})\".*", "$1");
    HttpResponse<String> r =
        h.post(
            "actions/keys/unpark",
            List.of("csrf", csrf, "group", ConsoleFixture.MAIL, "key", "no-such-key"),
            as);
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(rows().get(0))
        .containsExactly(
            "carol",
            "203.0.113.9 via 127.0.0.1",
            "keys.unpark",
            List.of(),
            "refused 404: key no-such-key is not parked in " + ConsoleFixture.MAIL);
    assertThat(h.get("commands").statusCode()).isEqualTo(401); // the proxy must name someone
  }

  @Test
  @Order(3)
  void aNewlineInAKeyIsRecordedAsItIsAndCannotForgeALine() throws Exception {
    Http h = login(tokened, ALICE);
    HttpResponse<String> r =
        post(h, "keys/unpark", "group", ConsoleFixture.MAIL, "key", FORGED_KEY);
    assertThat(r.statusCode()).isEqualTo(303);
    assertThat(rows().get(0).get(3)).isEqualTo(List.of(ConsoleFixture.MAIL + " key " + FORGED_KEY));
    String page = h.get("audit").body();
    assertThat(page).contains("k\nconsole audit: id=1 actor=&quot;root&quot;");
  }

  @Test
  @Order(4)
  void everyIdOfABulkActionIsRecorded() throws Exception {
    List<String> ids =
        fixture.queue.operations().deadLetters().list(100).stream()
            .map(d -> d.messageId().toString())
            .sorted()
            .toList();
    assertThat(ids).hasSizeGreaterThanOrEqualTo(2);
    Http h = login(tokened, ALICE);
    assertThat(post(h, "dead-letters/discard", "type", ConsoleFixture.CHARGE).statusCode())
        .isEqualTo(303);
    List<Object> row = rows().get(0);
    assertThat(row.get(2)).isEqualTo("dead-letters.discard");
    assertThat(row.get(3)).isEqualTo(ids);
    assertThat((String) row.get(4)).startsWith("discarded all " + ids.size());
  }

  @Test
  @Order(5)
  void noActionRunsWhenItsAuditRowCannotBeWritten() throws Exception {
    fixture.mail.storeMessage(ConsoleFixture.FAILING_PREFIX + "2", new byte[] {1});
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                fixture
                    .mail
                    .operations()
                    .parkedKeys(fixture.mail.group())
                    .containsKey(ConsoleFixture.FAILING_PREFIX + "2"));
    Http h = login(tokened, ALICE);
    sql("ALTER TABLE pumpconsole.audit RENAME TO audit_away");
    try {
      HttpResponse<String> r =
          post(
              h,
              "keys/unpark",
              "group",
              ConsoleFixture.MAIL,
              "key",
              ConsoleFixture.FAILING_PREFIX + "2");
      assertThat(r.statusCode()).isEqualTo(503);
      assertThat(r.body()).contains("pumpconsole.audit does not exist");
      assertThat(fixture.mail.operations().parkedKeys(fixture.mail.group()))
          .containsKey(ConsoleFixture.FAILING_PREFIX + "2");
    } finally {
      sql("ALTER TABLE pumpconsole.audit_away RENAME TO audit");
    }
  }

  @Test
  @Order(6)
  void aLoginExpiresWithItsCookieAndEndsWithLogout() throws Exception {
    Http h = login(tokened, BOB);
    assertThat(h.get("commands").body()).contains("id=\"logout\"");
    String ticket = h.cookies.get("pump_console_login");
    HttpResponse<String> out = h.post("logout", List.of("csrf", h.csrf()));
    assertThat(out.statusCode()).isEqualTo(200);
    assertThat(out.headers().allValues("Set-Cookie"))
        .anyMatch(
            c -> c.startsWith("pump_console_login=;") && c.contains("Expires=Thu, 01 Jan 1970"));
    Http replay = new Http(tokened.uri());
    replay.cookies.put("pump_console_login", ticket);
    assertThat(replay.get("commands").statusCode()).isEqualTo(401);
  }
}
