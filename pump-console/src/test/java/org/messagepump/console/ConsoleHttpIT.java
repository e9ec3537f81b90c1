package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.DeadLetter;
import org.messagepump.eventstream.Checkpoint;
import org.messagepump.testkit.PostgresExtension;

/** Every endpoint over real HTTP on a real database, with good and bad input. */
@ExtendWith(PostgresExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleHttpIT {

  static final String TOKEN = "s3cret-token-0123456789";

  static ConsoleFixture fixture;
  static ConsoleServer open;
  static ConsoleServer tokened;
  static ConsoleServer readOnly;
  static ConsoleServer payloads;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    fixture = new ConsoleFixture(ds).start(30);
    fixture.heal();
    open =
        ConsoleServer.start(
            ds,
            ConsoleConfig.builder().meterRegistry(fixture.registry).actorName("ops-test").build(),
            "127.0.0.1",
            0);
    tokened =
        ConsoleServer.start(ds, ConsoleConfig.builder().accessToken(TOKEN).build(), "127.0.0.1", 0);
    readOnly =
        ConsoleServer.start(ds, ConsoleConfig.builder().readOnly(true).build(), "127.0.0.1", 0);
    payloads =
        ConsoleServer.start(ds, ConsoleConfig.builder().showPayloads(true).build(), "127.0.0.1", 0);
  }

  @AfterAll
  static void stop() {
    for (ConsoleServer s : new ConsoleServer[] {open, tokened, readOnly, payloads}) {
      if (s != null) {
        s.close();
      }
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  private static Http browser() {
    return new Http(open.uri());
  }

  private static List<DeadLetter> deadLetters() {
    return fixture.queue.operations().deadLetters().list(100);
  }

  @Test
  @Order(1)
  void everyPageRendersWithWhatItShouldShow() throws Exception {
    Http h = browser();
    HttpResponse<String> overview = h.get("");
    assertThat(overview.statusCode()).isEqualTo(200);
    assertThat(overview.headers().firstValue("Content-Security-Policy").orElse(""))
        .contains("script-src 'self'");
    assertThat(overview.body())
        .contains(
            "dead letters", ConsoleFixture.LEDGER, ConsoleFixture.MAIL, "charges", "handled/s");
    assertThat(h.cookies).containsKey("pump_console_session");

    String commands = h.get("commands").body();
    assertThat(commands)
        .contains(ConsoleFixture.CHARGE, "card declined", "Retry", "Discard", "hidden");
    assertThat(commands).contains("<th>priority</th>");
    for (DeadLetter d : deadLetters()) {
      String row = commands.substring(commands.indexOf("id=\"dl-" + d.messageId() + "\""));
      assertThat(row.substring(0, row.indexOf("</tr>")))
          .contains("<td class=\"num priority\">" + d.priority() + "</td>");
    }
    assertThat(commands).doesNotContain("customer-3&quot;"); // payloads are hidden by default
    assertThat(h.get("commands?type=" + ConsoleFixture.CHARGE + "&limit=2").body())
        .contains("2 shown of 3");

    assertThat(h.get("events").body()).contains("Parked streams", "ledger rejects stream");
    assertThat(h.get("events?handler=" + ConsoleFixture.LEDGER).body())
        .contains("stream-" + fixture.poisonedStream(), "Resume", "Reset", "Set checkpoint");
    assertThat(h.get("balancer").body()).contains(ConsoleFixture.BAD_KEY, "Fairness", "Unpark");
    assertThat(h.get("balancer?group=" + ConsoleFixture.MAIL).body())
        .contains("mailbox of " + ConsoleFixture.BAD_KEY + " is full", "head age");
    assertThat(h.get("audit").statusCode()).isEqualTo(200);
    assertThat(h.get("static/console.js").body()).contains("data-confirm");
    assertThat(h.get("static/console.css").headers().firstValue("Content-Type").orElse(""))
        .startsWith("text/css");
    h.get("api/overview");
    Thread.sleep(1_600);
    String json = h.get("api/overview").body();
    assertThat(json)
        .contains(
            "\"cmd.dead\"", "\"ev." + ConsoleFixture.LEDGER + ".lag\"", "\"pump.charges.handled\"");
  }

  @Test
  @Order(2)
  void unknownPagesIdsAndBadParametersAreRefused() throws Exception {
    Http h = browser();
    assertThat(h.get("nope").statusCode()).isEqualTo(404);
    assertThat(h.get("static/other.js").statusCode()).isEqualTo(404);
    assertThat(h.get("events?handler=nope").statusCode()).isEqualTo(404);
    assertThat(h.get("balancer?group=nope").statusCode()).isEqualTo(404);
    assertThat(h.get("commands?limit=abc").statusCode()).isEqualTo(400);
    assertThat(h.get("commands?limit=0").statusCode()).isEqualTo(400);
    assertThat(h.get("actions/dead-letters/retry").statusCode()).isEqualTo(405);
    assertThat(h.send("PUT", "commands").statusCode()).isEqualTo(405);
    assertThat(h.send("DELETE", "actions/dead-letters/retry").statusCode()).isEqualTo(405);

    String csrf = h.csrf();
    String before = h.get("commands").body();
    assertThat(h.post("actions/nope", List.of("csrf", csrf)).statusCode()).isEqualTo(404);
    assertThat(post(h, "dead-letters/retry", "id", UUID.randomUUID().toString()).statusCode())
        .isEqualTo(404);
    assertThat(post(h, "dead-letters/discard", "id", UUID.randomUUID().toString()).statusCode())
        .isEqualTo(404);
    assertThat(post(h, "dead-letters/retry", "id", "not-a-uuid").statusCode()).isEqualTo(400);
    assertThat(post(h, "dead-letters/retry").statusCode()).isEqualTo(400);
    assertThat(post(h, "dead-letters/retry", "type", "ops.Unknown").statusCode()).isEqualTo(404);
    assertThat(
            post(
                    h,
                    "dead-letters/retry",
                    "type",
                    ConsoleFixture.CHARGE,
                    "id",
                    UUID.randomUUID().toString())
                .statusCode())
        .isEqualTo(400);
    assertThat(post(h, "streams/resume", "handler", "nope").statusCode()).isEqualTo(404);
    assertThat(
            post(h, "streams/resume", "handler", ConsoleFixture.LEDGER, "stream", "x").statusCode())
        .isEqualTo(400);
    assertThat(
            post(h, "streams/resume", "handler", ConsoleFixture.LEDGER, "stream", "999999")
                .statusCode())
        .isEqualTo(404);
    assertThat(post(h, "checkpoints/reset", "handler", ConsoleFixture.LEDGER).statusCode())
        .isEqualTo(400);
    assertThat(
            post(h, "checkpoints/reset", "handler", ConsoleFixture.LEDGER, "confirm", "ops")
                .statusCode())
        .isEqualTo(400);
    assertThat(post(h, "checkpoints/reset", "handler", "nope", "confirm", "nope").statusCode())
        .isEqualTo(404);
    assertThat(
            post(
                    h,
                    "checkpoints/set",
                    "handler",
                    ConsoleFixture.LEDGER,
                    "stream",
                    "1",
                    "expected",
                    "-1",
                    "offset",
                    "0",
                    "confirm",
                    ConsoleFixture.LEDGER)
                .statusCode())
        .isEqualTo(400);
    assertThat(post(h, "keys/unpark", "group", "nope", "key", "k").statusCode()).isEqualTo(404);
    assertThat(
            post(h, "keys/unpark", "group", ConsoleFixture.MAIL, "key", "customer-1").statusCode())
        .isEqualTo(404);
    assertThat(post(h, "keys/unpark", "group", ConsoleFixture.MAIL).statusCode()).isEqualTo(400);
    // Nothing moved.
    assertThat(deadLetters()).hasSize(3);
    assertThat(fixture.events.operations().parked(ConsoleFixture.LEDGER)).hasSize(1);
    assertThat(fixture.mail.operations().parkedKeys(fixture.mail.group()))
        .containsKey(ConsoleFixture.BAD_KEY);
    assertThat(h.get("commands").body())
        .contains(before.substring(before.indexOf("<table id=\"dead-letters\"")));
  }

  @Test
  @Order(3)
  void postsWithoutTheCsrfTokenOrFromAnotherOriginAreRefusedAndCounted() throws Exception {
    Http h = browser();
    String csrf = h.csrf();
    String id = deadLetters().get(0).messageId().toString();
    assertThat(h.post("actions/dead-letters/retry", List.of("id", id)).statusCode()).isEqualTo(403);
    assertThat(
            h.post("actions/dead-letters/retry", List.of("id", id, "csrf", "0".repeat(64)))
                .statusCode())
        .isEqualTo(403);
    Http other = browser(); // its own cookie: a token from another session does not fit
    other.csrf();
    assertThat(
            other.post("actions/dead-letters/retry", List.of("id", id, "csrf", csrf)).statusCode())
        .isEqualTo(403);
    assertThat(
            h.post(
                    "actions/dead-letters/retry",
                    List.of("id", id, "csrf", csrf),
                    "Origin",
                    "http://evil.example")
                .statusCode())
        .isEqualTo(403);
    assertThat(deadLetters()).extracting(d -> d.messageId().toString()).contains(id);
    // Refused before anyone was identified: counted, not in the operators' audit trail.
    String audit = h.get("audit").body();
    assertThat(audit).doesNotContain("refused 403").doesNotContain("anonymous</td>");
    assertThat(audit).containsPattern("<span id=\"refused\">[1-9]");
  }

  @Test
  @Order(4)
  void retryPutsADeadLetterBackAndItIsHandled() throws Exception {
    Http h = browser();
    int handled = fixture.handledCharges.get();
    UUID id = deadLetters().get(0).messageId();
    HttpResponse<String> r = post(h, "dead-letters/retry", "id", id.toString());
    assertThat(r.statusCode()).isEqualTo(303);
    String location = r.headers().firstValue("Location").orElse("");
    assertThat(location).matches("/commands\\?done=[0-9a-f]{32}");
    assertThat(h.get(location.substring(1)).body()).contains("retried 1");
    assertThat(deadLetters()).extracting(DeadLetter::messageId).doesNotContain(id);
    await().atMost(Duration.ofSeconds(30)).until(() -> fixture.handledCharges.get() > handled);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                h.get("commands").body().contains("id=\"retried-" + id + "\" data-state=\"done\""));
    assertThat(h.get("audit").body()).contains("dead-letters.retry", id.toString(), "retried 1");
  }

  @Test
  @Order(5)
  void bulkRetryDiscardAndRetryAllOfAType() throws Exception {
    Http h = browser();
    List<DeadLetter> left = deadLetters();
    assertThat(left).hasSize(2);
    HttpResponse<String> bulk =
        post(
            h,
            "dead-letters/discard",
            "id",
            left.get(0).messageId().toString(),
            "id",
            UUID.randomUUID().toString());
    assertThat(bulk.statusCode()).isEqualTo(303);
    String location = bulk.headers().firstValue("Location").orElse("");
    assertThat(h.get(location.substring(1)).body()).contains("discarded 1, 1 unknown");
    assertThat(deadLetters()).hasSize(1);
    assertThat(post(h, "dead-letters/retry", "type", ConsoleFixture.CHARGE).statusCode())
        .isEqualTo(303);
    assertThat(deadLetters()).isEmpty();
  }

  @Test
  @Order(6)
  void resumeSetAndResetCheckpointsAndUnparkAKey() throws Exception {
    Http h = browser();
    long stream = fixture.poisonedStream();
    assertThat(
            post(
                    h,
                    "streams/resume",
                    "handler",
                    ConsoleFixture.LEDGER,
                    "stream",
                    String.valueOf(stream))
                .statusCode())
        .isEqualTo(303);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> checkpoint(stream).lag() == 0 && !checkpoint(stream).parked());
    long end = checkpoint(stream).offset();
    // Set: guarded by the expected offset (409 when it moved) and the typed confirmation.
    assertThat(
            post(
                    h,
                    "checkpoints/set",
                    "handler",
                    ConsoleFixture.LEDGER,
                    "stream",
                    String.valueOf(stream),
                    "expected",
                    String.valueOf(end + 1),
                    "offset",
                    "0",
                    "confirm",
                    ConsoleFixture.LEDGER)
                .statusCode())
        .isEqualTo(409);
    assertThat(
            post(
                    h,
                    "checkpoints/set",
                    "handler",
                    ConsoleFixture.LEDGER,
                    "stream",
                    String.valueOf(stream),
                    "expected",
                    String.valueOf(end),
                    "offset",
                    String.valueOf(end - 1),
                    "confirm",
                    ConsoleFixture.LEDGER)
                .statusCode())
        .isEqualTo(303);
    // Moved one back: the event is replayed and the checkpoint is at the end again.
    await().atMost(Duration.ofSeconds(30)).until(() -> checkpoint(stream).offset() == end);
    assertThat(
            post(
                    h,
                    "checkpoints/reset",
                    "handler",
                    ConsoleFixture.LEDGER,
                    "confirm",
                    ConsoleFixture.LEDGER)
                .statusCode())
        .isEqualTo(303);
    assertThat(post(h, "streams/resume", "handler", ConsoleFixture.LEDGER).statusCode())
        .isEqualTo(404);

    assertThat(
            post(h, "keys/unpark", "group", ConsoleFixture.MAIL, "key", ConsoleFixture.BAD_KEY)
                .statusCode())
        .isEqualTo(303);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                fixture
                    .mail
                    .operations()
                    .partitionStats(fixture.mail.group(), ConsoleFixture.BAD_KEY)
                    .isEmpty());
    assertThat(h.get("audit").body())
        .contains("keys.unpark", "checkpoints.reset", "checkpoints.set", "streams.resume");
  }

  private static Checkpoint checkpoint(long stream) {
    return fixture.events.operations().checkpoints(ConsoleFixture.LEDGER).stream()
        .filter(c -> c.streamId() == stream)
        .findFirst()
        .orElseThrow();
  }

  @Test
  @Order(7)
  void anAccessTokenIsRequiredWhenConfigured() throws Exception {
    Http h = new Http(tokened.uri());
    assertThat(h.get("").statusCode()).isEqualTo(401);
    assertThat(h.get("", "Authorization", "Bearer wrong-token-0000000000").statusCode())
        .isEqualTo(401);
    assertThat(h.get("?token=wrong").statusCode()).isEqualTo(401);
    assertThat(h.get("", "Authorization", "Bearer " + TOKEN).statusCode()).isEqualTo(200);
    HttpResponse<String> login = h.get("commands?token=" + TOKEN);
    assertThat(login.statusCode()).isEqualTo(302);
    assertThat(login.headers().firstValue("Location").orElse(""))
        .endsWith("/commands")
        .doesNotContain(TOKEN);
    assertThat(login.headers().allValues("Set-Cookie"))
        .anyMatch(
            c ->
                c.startsWith("pump_console_login=")
                    && c.contains("HttpOnly")
                    && c.contains("SameSite=Strict"));
    assertThat(h.get("commands").statusCode()).isEqualTo(200);
    h.cookies.put("pump_console_login", "wrong");
    assertThat(h.get("commands").statusCode()).isEqualTo(401);
    assertThat(
            new Http(tokened.uri())
                .post("actions/dead-letters/retry", List.of("type", "x"))
                .statusCode())
        .isEqualTo(401);
  }

  @Test
  @Order(7)
  void aReadOnlyConsoleShowsNoButtonsAndRefusesActions() throws Exception {
    Http h = new Http(readOnly.uri());
    assertThat(h.get("commands").body()).doesNotContain("method=\"post\"");
    assertThat(h.get("events?handler=" + ConsoleFixture.LEDGER).body())
        .doesNotContain("method=\"post\"");
    assertThat(h.get("").body()).contains("read-only");
    String csrf = h.csrf();
    HttpResponse<String> r =
        h.post(
            "actions/checkpoints/reset",
            List.of(
                "csrf", csrf, "handler", ConsoleFixture.LEDGER, "confirm", ConsoleFixture.LEDGER));
    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(r.body()).contains("read-only");
    assertThat(h.get("audit").body()).contains("refused 403: the console is read-only");
  }

  @Test
  @Order(1)
  void payloadsAreShownOnlyWhenSwitchedOn() throws Exception {
    String preview = "&quot;customer&quot;:&quot;customer-3&quot;";
    String shown = new Http(payloads.uri()).get("commands").body();
    assertThat(shown).contains("payloads shown", preview);
    String hidden = browser().get("commands").body();
    assertThat(hidden).contains("payloads hidden").doesNotContain(preview);
  }

  @Test
  @Order(8)
  void mountedUnderAPathItsLinksCookiesAndActionsFollowTheMountPoint(DataSource ds)
      throws Exception {
    org.eclipse.jetty.server.Server jetty = new org.eclipse.jetty.server.Server(0);
    org.eclipse.jetty.ee10.servlet.ServletContextHandler app =
        new org.eclipse.jetty.ee10.servlet.ServletContextHandler();
    app.setContextPath("/app");
    app.addServlet(
        new org.eclipse.jetty.ee10.servlet.ServletHolder(
            new ConsoleServlet(ds, ConsoleConfig.defaults())),
        "/ops/pump/*");
    jetty.setHandler(app);
    jetty.start();
    try {
      int port =
          ((org.eclipse.jetty.server.ServerConnector) jetty.getConnectors()[0]).getLocalPort();
      Http h = new Http(java.net.URI.create("http://127.0.0.1:" + port + "/app/ops/pump/"));
      HttpResponse<String> page = h.get("commands");
      assertThat(page.statusCode()).isEqualTo(200);
      assertThat(page.body())
          .contains("href=\"/app/ops/pump/events\"", "src=\"/app/ops/pump/static/console.js\"");
      assertThat(page.headers().allValues("Set-Cookie"))
          .anyMatch(c -> c.startsWith("pump_console_session=") && c.contains("Path=/app/ops/pump"));
      assertThat(h.get("static/console.css").statusCode()).isEqualTo(200);
      HttpResponse<String> action = post(h, "dead-letters/retry", "type", "ops.Unknown");
      assertThat(action.statusCode()).isEqualTo(404);
      assertThat(action.body()).contains("no dead letters of type ops.Unknown");
    } finally {
      jetty.stop();
    }
  }

  @Test
  void aNonLoopbackBindNeedsAToken(DataSource ds) {
    assertThatThrownBy(() -> ConsoleServer.start(ds, ConsoleConfig.defaults(), "0.0.0.0", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("requires an access token");
    assertThatThrownBy(() -> ConsoleServer.start(ds, ConsoleConfig.defaults(), "127.0.0.1", 70_000))
        .isInstanceOf(IllegalArgumentException.class);
    try (ConsoleServer s =
        ConsoleServer.start(ds, ConsoleConfig.builder().accessToken(TOKEN).build(), "0.0.0.0", 0)) {
      assertThat(s.uri().getHost()).isEqualTo("127.0.0.1");
    }
  }

  private static HttpResponse<String> post(Http h, String action, String... form) throws Exception {
    List<String> fields = new java.util.ArrayList<>(List.of("csrf", h.csrf()));
    fields.addAll(List.of(form));
    return h.post("actions/" + action, fields);
  }
}
