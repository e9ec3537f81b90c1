package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.testkit.PostgresExtension;

/**
 * The attacks a web page can make on a console an operator runs on their machine (DNS rebinding,
 * forged and planted CSRF tokens, sandboxed frames, a proxy in front of a tokenless console), each
 * refused over real HTTP with nothing changed in the database.
 */
@ExtendWith(PostgresExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleSecurityIT {

  static ConsoleFixture fixture;
  static ConsoleServer server;
  static String deadLetter;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    fixture = new ConsoleFixture(ds).start(10);
    server = ConsoleServer.start(ds, ConsoleConfig.defaults(), "127.0.0.1", 0);
    deadLetter = fixture.queue.operations().deadLetters().list(1).get(0).messageId().toString();
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  private static int port() {
    return server.uri().getPort();
  }

  private static HttpResponse<String> discard(Http h, String csrf, String... headers)
      throws Exception {
    return h.post("actions/dead-letters/discard", List.of("csrf", csrf, "id", deadLetter), headers);
  }

  private static void nothingChanged() {
    assertThat(fixture.queue.operations().deadLetters().count()).isEqualTo(1);
  }

  @Test
  void aRebindingPageCanNeitherReadNorAct() throws Exception {
    Http h = new Http(server.uri());
    String csrf = h.csrf(); // even with a real session's token (the rebound page cannot read it)
    String attacker = "pump.attacker.example:" + port();
    HttpResponse<String> read = h.get("commands", "Host", attacker);
    assertThat(read.statusCode()).isEqualTo(421);
    assertThat(read.body()).doesNotContain(deadLetter);
    assertThat(h.get("api/overview", "Host", attacker).statusCode()).isEqualTo(421);
    assertThat(discard(h, csrf, "Host", attacker, "Origin", "http://" + attacker).statusCode())
        .isEqualTo(421);
    nothingChanged();
    // Loopback names are the console's own.
    assertThat(h.get("commands", "Host", "localhost:" + port()).statusCode()).isEqualTo(200);
    assertThat(h.get("commands", "Host", "[::1]:" + port()).statusCode()).isEqualTo(200);
  }

  @Test
  void originNullIsCrossOrigin() throws Exception {
    Http h = new Http(server.uri());
    String csrf = h.csrf();
    HttpResponse<String> r = discard(h, csrf, "Origin", "null");
    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(r.body()).contains("cross-origin");
    nothingChanged();
  }

  @Test
  void aCsrfPairTheClientMadeUpIsRefused() throws Exception {
    Http h = new Http(server.uri());
    h.cookies.put("pump_console_session", "a".repeat(64));
    h.cookies.put("pump_console_csrf", "a".repeat(64));
    assertThat(discard(h, "a".repeat(64)).statusCode()).isEqualTo(403);
    nothingChanged();
  }

  @Test
  void aCookiePlantedFromAnotherPortDoesNotLetItsPagePost() throws Exception {
    Http victim = new Http(server.uri());
    String csrf = victim.csrf();
    // A page on another port of 127.0.0.1 may set cookies for 127.0.0.1 (cookies ignore ports):
    // it replaces the session cookie with one it knows, then posts from a sandboxed frame.
    String planted = "b".repeat(64);
    victim.cookies.put("pump_console_session", planted);
    assertThat(discard(victim, planted).statusCode()).isEqualTo(403);
    assertThat(discard(victim, csrf).statusCode()).isEqualTo(403);
    assertThat(discard(victim, planted, "Origin", "null").statusCode()).isEqualTo(403);
    // From that page itself: its origin has the other port.
    Http page = new Http(server.uri());
    String own = page.csrf();
    assertThat(discard(page, own, "Origin", "http://127.0.0.1:" + (port() + 1)).statusCode())
        .isEqualTo(403);
    assertThat(discard(page, own, "Sec-Fetch-Site", "same-site").statusCode()).isEqualTo(403);
    nothingChanged();
  }

  @Test
  void aForwardingHeaderEndsTokenlessService() throws Exception {
    Http h = new Http(server.uri());
    String csrf = h.csrf();
    for (String header :
        List.of("X-Forwarded-For", "Forwarded", "X-Forwarded-Proto", "X-Real-IP")) {
      HttpResponse<String> r = h.get("commands", header, "for=203.0.113.9");
      assertThat(r.statusCode()).as(header).isEqualTo(403);
      assertThat(r.body()).contains("proxy forwarded");
      assertThat(discard(h, csrf, header, "203.0.113.9").statusCode()).isEqualTo(403);
    }
    nothingChanged();
  }

  @Test
  @Order(Integer.MAX_VALUE)
  void theConsolesOwnPageStillActs() throws Exception {
    Http h = new Http(server.uri());
    String csrf = h.csrf();
    List<String> headers = new ArrayList<>(List.of("Origin", "http://127.0.0.1:" + port()));
    headers.addAll(List.of("Sec-Fetch-Site", "same-origin"));
    HttpResponse<String> r = discard(h, csrf, headers.toArray(String[]::new));
    assertThat(r.statusCode()).isEqualTo(303);
    assertThat(fixture.queue.operations().deadLetters().count()).isZero();
  }
}
