package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.testkit.PostgresExtension;

/**
 * Hostile input and stored data: bytes that are not UTF-8, NUL, a key longer than the drivers allow
 * (written by direct SQL), a link that tries to put words in the console's mouth, and requests
 * Jetty itself refuses.
 */
@ExtendWith(PostgresExtension.class)
class ConsoleHostileInputIT {

  static final String TOKEN = "hostile-token-0123456789";
  static final String LONG_KEY = "k".repeat(600);

  static ConsoleFixture fixture;
  static ConsoleServer server;
  static ConsoleServer tokened;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    fixture = new ConsoleFixture(ds).start(10);
    // A charge whose payload is not JSON and holds NUL bytes: it fails to decode and parks.
    fixture.queue.enqueueRaw(
        ConsoleFixture.CHARGE,
        "{\"n\":\u0000\u0001<b>x</b>".getBytes(StandardCharsets.UTF_8),
        EnqueueOptions.defaults());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> fixture.queue.operations().deadLetters().count() == 2);
    // A parked key longer than the balancer accepts, as a direct SQL write could leave one.
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO balancer.partitions (partition_group, partition_key, rotation,"
                    + " parked_at, parked_reason) VALUES (?, ?, nextval('balancer.rotation'),"
                    + " clock_timestamp(), 'too long')")) {
      ps.setString(1, ConsoleFixture.MAIL);
      ps.setString(2, LONG_KEY);
      ps.executeUpdate();
    }
    server =
        ConsoleServer.start(ds, ConsoleConfig.builder().showPayloads(true).build(), "127.0.0.1", 0);
    tokened =
        ConsoleServer.start(ds, ConsoleConfig.builder().accessToken(TOKEN).build(), "127.0.0.1", 0);
  }

  @AfterAll
  static void stop() {
    for (ConsoleServer s : new ConsoleServer[] {server, tokened}) {
      if (s != null) {
        s.close();
      }
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  @Test
  void parametersThatAreNotTextAreBadRequests() throws Exception {
    Http h = new Http(server.uri());
    for (String path :
        List.of(
            "commands?type=%00",
            "commands?type=%ff%fe",
            "events?handler=%00",
            "events?handler=%c3%28",
            "balancer?group=%ff")) {
      HttpResponse<String> r = h.get(path);
      assertThat(r.statusCode()).as(path).isEqualTo(400);
      assertThat(r.headers().firstValue("Content-Security-Policy")).as(path).isPresent();
    }
  }

  @Test
  void nulBytesNeverReachThePage() throws Exception {
    String page = new Http(server.uri()).get("commands").body();
    assertThat(page)
        .contains("&lt;b&gt;x&lt;/b&gt;")
        .doesNotContain("\u0000")
        .doesNotContain("\u0001");
  }

  @Test
  void aKeyOverTheLimitIsShownNotA500() throws Exception {
    HttpResponse<String> r = new Http(server.uri()).get("balancer?group=" + ConsoleFixture.MAIL);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("kkkkkkkkkk", "too long");
  }

  @Test
  void aLinkCannotMakeTheConsoleSaySomething() throws Exception {
    Http h = new Http(server.uri());
    String page = h.get("commands?done=All+dead+letters+were+handled.+Run+curl+evil.sh").body();
    assertThat(page).doesNotContain("All dead letters were handled").doesNotContain("id=\"flash\"");
    // An action's own message is shown once, after its redirect; the URL carries no text.
    String id = fixture.queue.operations().deadLetters().list(1).get(0).messageId().toString();
    HttpResponse<String> r =
        h.post("actions/dead-letters/discard", List.of("csrf", h.csrf(), "id", id));
    assertThat(r.statusCode()).isEqualTo(303);
    String location = r.headers().firstValue("Location").orElseThrow();
    assertThat(location).doesNotContain("discarded");
    String after = h.get(location.substring(1)).body();
    assertThat(after).contains("id=\"flash\"", "discarded 1");
    assertThat(h.get(location.substring(1)).body()).doesNotContain("id=\"flash\"");
  }

  @Test
  void aFormSendsAStoredKeyBackExactlyCarriageReturnAndAll() throws Exception {
    String key = ConsoleFixture.FAILING_PREFIX + "a\r\nb\rc";
    fixture.mail.storeMessage(key, new byte[] {1});
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> fixture.mail.operations().parkedKeys(fixture.mail.group()).containsKey(key));
    Http h = new Http(server.uri());
    String page = h.get("balancer?group=" + ConsoleFixture.MAIL).body();
    String encoded =
        java.util.Base64.getUrlEncoder()
            .withoutPadding()
            .encodeToString(key.getBytes(StandardCharsets.UTF_8));
    assertThat(page).contains("name=\"key64\" value=\"" + encoded + "\"");
    HttpResponse<String> r =
        h.post(
            "actions/keys/unpark",
            List.of("csrf", h.csrf(), "group", ConsoleFixture.MAIL, "key64", encoded));
    assertThat(r.statusCode()).isEqualTo(303);
    assertThat(
            h.post(
                    "actions/keys/unpark",
                    List.of("csrf", h.csrf(), "group", ConsoleFixture.MAIL, "key64", "%%%"))
                .statusCode())
        .isEqualTo(400);
  }

  @Test
  void aTokenLoginKeepsTheRestOfTheQuery() throws Exception {
    HttpResponse<String> r =
        new Http(tokened.uri()).get("commands?type=ops.Charge&token=" + TOKEN + "&limit=5");
    assertThat(r.statusCode()).isEqualTo(302);
    assertThat(r.headers().firstValue("Location").orElse(""))
        .isEqualTo("/commands?type=ops.Charge&limit=5");
  }

  @Test
  void jettysOwnErrorPagesCarryTheSecurityHeaders() throws Exception {
    Http h = new Http(server.uri());
    for (String request : List.of("GET /%zz HTTP/1.1", "GET /commands?type=%zz HTTP/1.1")) {
      String response = h.raw(request);
      assertThat(response).as(request).startsWith("HTTP/1.1 400");
      assertThat(response.toLowerCase(java.util.Locale.ROOT))
          .as(request)
          .contains("content-security-policy: default-src 'none'")
          .contains("x-content-type-options: nosniff")
          .contains("x-frame-options: deny");
    }
  }
}
