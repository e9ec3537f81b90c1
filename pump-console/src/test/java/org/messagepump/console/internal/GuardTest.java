package org.messagepump.console.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.messagepump.console.ConsoleConfig;

class GuardTest {

  static final String TOKEN = "abcdefghijklmnopqrstuvwxyz";

  /** A request as a servlet container would hand it over. */
  static final class Req {
    String method = "GET";
    String remote = "127.0.0.1";
    String local = "127.0.0.1";
    final Map<String, String> headers = new HashMap<>(Map.of("Host", "127.0.0.1:8089"));
    final Map<String, String> params = new HashMap<>();
    final List<Cookie> cookies = new ArrayList<>();
    String uri = "/commands";
    String query;

    Req method(String m) {
      method = m;
      return this;
    }

    Req from(String address) {
      remote = address;
      return this;
    }

    Req header(String name, String value) {
      headers.put(name, value);
      return this;
    }

    Req param(String name, String value) {
      params.put(name, value);
      return this;
    }

    Req cookie(String name, String value) {
      cookies.add(new Cookie(name, value));
      return this;
    }

    HttpServletRequest http() {
      return (HttpServletRequest)
          Proxy.newProxyInstance(
              GuardTest.class.getClassLoader(),
              new Class<?>[] {HttpServletRequest.class},
              (proxy, m, args) ->
                  switch (m.getName()) {
                    case "getMethod" -> method;
                    case "getRemoteAddr" -> remote;
                    case "getLocalAddr" -> local;
                    case "getLocalPort" -> 8089;
                    case "getHeader" -> header((String) args[0]);
                    case "getHeaderNames" -> Collections.enumeration(headers.keySet());
                    case "getParameter" -> params.get((String) args[0]);
                    case "getCookies" -> cookies.isEmpty() ? null : cookies.toArray(Cookie[]::new);
                    case "getRemoteUser" -> null;
                    case "isSecure" -> false;
                    case "getRequestURI" -> uri;
                    case "getQueryString" -> query;
                    default -> throw new UnsupportedOperationException(m.getName());
                  });
    }

    private String header(String name) {
      for (Map.Entry<String, String> e : headers.entrySet()) {
        if (e.getKey().equalsIgnoreCase(name)) {
          return e.getValue();
        }
      }
      return null;
    }
  }

  /** The cookies a response sets. */
  static final class Resp {
    final List<Cookie> set = new ArrayList<>();

    HttpServletResponse http() {
      return (HttpServletResponse)
          Proxy.newProxyInstance(
              GuardTest.class.getClassLoader(),
              new Class<?>[] {HttpServletResponse.class},
              (proxy, m, args) -> {
                if (m.getName().equals("addCookie")) {
                  set.add((Cookie) args[0]);
                  return null;
                }
                throw new UnsupportedOperationException(m.getName());
              });
    }

    String value(String name) {
      return set.stream()
          .filter(c -> c.getName().equals(name))
          .map(Cookie::getValue)
          .reduce((a, b) -> b)
          .orElse(null);
    }
  }

  static Settings settings(ConsoleConfig c) {
    return new Settings(
        c.readOnly(),
        c.showPayloads(),
        c.title(),
        MicrometerReadings.of(c.meterRegistry()),
        c::actorOf,
        c.actorName(),
        c.operators(),
        c.identityHeader(),
        c.trustedProxies(),
        c.remoteWithoutToken(),
        c.allowedHosts(),
        c.tlsInFront(),
        c.secret() == null ? null : c.secret().getBytes(StandardCharsets.UTF_8),
        c.loginTtl(),
        c.auditSchema(),
        c.auditRetention());
  }

  static Guard guard(ConsoleConfig c) {
    return new Guard(settings(c), List.of());
  }

  static Guard.Caller admit(Guard g, Req r) {
    return g.admit(r.http(), new Resp().http(), "");
  }

  static int status(Runnable r) {
    try {
      r.run();
      return 200;
    } catch (HttpError e) {
      return e.status();
    }
  }

  @Test
  void withoutATokenOnlyDirectLoopbackClientsAreServed() {
    Guard guard = guard(ConsoleConfig.defaults());
    assertThat(admit(guard, new Req()).actor()).isEqualTo(ConsoleConfig.DEFAULT_ACTOR);
    assertThat(admit(guard, new Req().from("::1")).actor()).isNotNull();
    assertThat(admit(guard, new Req().from("0:0:0:0:0:0:0:1")).actor()).isNotNull();
    assertThatThrownBy(() -> admit(guard, new Req().from("10.1.2.3")))
        .isInstanceOf(Refused.class)
        .hasMessageContaining("loopback");
    Req onAllInterfaces = new Req();
    onAllInterfaces.local = "10.0.0.5";
    assertThat(status(() -> admit(guard, onAllInterfaces))).isEqualTo(403);
    Guard trusting = guard(ConsoleConfig.builder().remoteWithoutToken(true).build());
    assertThat(admit(trusting, new Req().from("10.1.2.3")).actor()).isNotNull();
  }

  @Test
  void aForwardingHeaderEndsTokenlessService() {
    Guard guard = guard(ConsoleConfig.defaults());
    for (String header :
        List.of("Forwarded", "X-Forwarded-For", "x-forwarded-proto", "X-Forwarded-Host", "Via")) {
      assertThatThrownBy(() -> admit(guard, new Req().header(header, "10.9.8.7")))
          .as(header)
          .isInstanceOf(Refused.class)
          .hasMessageContaining("proxy forwarded");
    }
    // With tokens, a proxy in front is fine: the token identifies the operator.
    Guard tokened = guard(ConsoleConfig.builder().accessToken(TOKEN).build());
    assertThat(
            admit(
                    tokened,
                    new Req()
                        .header("X-Forwarded-For", "10.9.8.7")
                        .header("Authorization", "Bearer " + TOKEN))
                .actor())
        .isEqualTo(ConsoleConfig.DEFAULT_ACTOR);
  }

  @Test
  void onlyAllowedHostNamesAreAnswered() {
    Guard guard = guard(ConsoleConfig.builder().allowedHosts("pump.example.com").build());
    for (String host :
        List.of(
            "127.0.0.1:8089",
            "localhost:8089",
            "LOCALHOST",
            "ops.localhost:8089",
            "[::1]:8089",
            "127.0.0.7",
            "pump.example.com",
            "Pump.Example.Com.:443")) {
      assertThat(status(() -> admit(guard, new Req().header("Host", host))))
          .as(host)
          .isEqualTo(200);
    }
    for (String host :
        List.of(
            "pump.attacker.example:8089",
            "127.0.0.1.attacker.example",
            "localhost.attacker.example",
            "example.com",
            "127.1:8089",
            "0x7f000001",
            "a b",
            "127.0.0.1:99999",
            "[::1")) {
      assertThat(status(() -> admit(guard, new Req().header("Host", host))))
          .as(host)
          .isEqualTo(421);
    }
  }

  @Test
  void aTokenIsCheckedFromHeaderQueryOrLoginCookie() {
    Guard guard = guard(ConsoleConfig.builder().operator("alice", TOKEN).build());
    assertThat(
            admit(guard, new Req().from("10.1.2.3").header("Authorization", "Bearer " + TOKEN))
                .actor())
        .isEqualTo("alice");
    Resp login = new Resp();
    Req query = new Req().from("10.1.2.3").param("token", TOKEN);
    query.query = "type=a%20b&token=" + TOKEN + "&limit=5";
    Guard.Caller c = guard.admit(query.http(), login.http(), "");
    assertThat(c.redirect()).isEqualTo("/commands?type=a%20b&limit=5");
    String ticket = login.value(Guard.LOGIN_COOKIE);
    assertThat(ticket).doesNotContain(TOKEN);
    assertThat(login.set)
        .filteredOn(k -> k.getName().equals(Guard.LOGIN_COOKIE))
        .allMatch(k -> k.getMaxAge() == ConsoleConfig.DEFAULT_LOGIN_TTL.toSeconds());
    assertThat(admit(guard, new Req().cookie(Guard.LOGIN_COOKIE, ticket)).actor())
        .isEqualTo("alice");
    assertThat(status(() -> admit(guard, new Req()))).isEqualTo(401);
    assertThat(status(() -> admit(guard, new Req().cookie(Guard.LOGIN_COOKIE, TOKEN))))
        .isEqualTo(401);
    // A ticket whose expiry or name was edited no longer matches its signature.
    String[] parts = ticket.split("\\.");
    String later =
        parts[0] + "." + (Long.parseLong(parts[1]) + 86_400) + "." + parts[2] + "." + parts[3];
    assertThat(status(() -> admit(guard, new Req().cookie(Guard.LOGIN_COOKIE, later))))
        .isEqualTo(401);
    // Another process (another random secret) does not take this process's tickets.
    assertThat(
            status(
                () ->
                    admit(
                        guard(ConsoleConfig.builder().operator("alice", TOKEN).build()),
                        new Req().cookie(Guard.LOGIN_COOKIE, ticket))))
        .isEqualTo(401);
    // A token in a POST's query does not log in.
    assertThat(status(() -> admit(guard, new Req().method("POST").param("token", TOKEN))))
        .isEqualTo(401);
  }

  @Test
  void aTrustedProxyNamesTheOperatorAndNobodyElseCan() {
    Guard guard =
        guard(ConsoleConfig.builder().identityHeader("X-Auth-User", "10.0.0.0/8").build());
    Guard.Caller c =
        admit(
            guard,
            new Req()
                .from("10.2.3.4")
                .header("X-Auth-User", "carol")
                .header("X-Forwarded-For", "203.0.113.9"));
    assertThat(c.actor()).isEqualTo("carol");
    assertThat(c.from()).isEqualTo("203.0.113.9 via 10.2.3.4");
    assertThat(status(() -> admit(guard, new Req().from("10.2.3.4")))).isEqualTo(401);
    assertThat(status(() -> admit(guard, new Req().from("10.2.3.4").header("X-Auth-User", "a\nb"))))
        .isEqualTo(401);
    // Not from the proxy: the header means nothing, and without tokens nobody else gets in.
    assertThat(
            status(
                () -> admit(guard, new Req().from("192.168.1.1").header("X-Auth-User", "carol"))))
        .isEqualTo(403);
    assertThat(status(() -> admit(guard, new Req().header("X-Auth-User", "carol")))).isEqualTo(403);
  }

  @Test
  void aPostNeedsTheCsrfTokenTheServerSignedAndThisOrigin() {
    Guard guard = guard(ConsoleConfig.defaults());
    Resp first = new Resp();
    Guard.Caller c = guard.admit(new Req().http(), first.http(), "");
    String session = first.value(Guard.SESSION_COOKIE);
    assertThat(session).matches("[0-9a-f]{64}");
    String csrf = guard.csrf(c);
    Req ok = new Req().method("POST").cookie(Guard.SESSION_COOKIE, session).param("csrf", csrf);
    Guard.Caller again = admit(guard, ok);
    guard.checkPost(ok.http(), again);
    guard.checkPost(ok.header("Origin", "http://127.0.0.1:8089").http(), again);

    // A pair the client made up: any cookie with a field of the same value.
    Req selfMade =
        new Req()
            .method("POST")
            .cookie(Guard.SESSION_COOKIE, "a".repeat(64))
            .param("csrf", "a".repeat(64));
    assertThat(status(() -> guard.checkPost(selfMade.http(), admit(guard, selfMade))))
        .isEqualTo(403);
    // The right token with another session's cookie (planted by another port of this host).
    Req planted =
        new Req().method("POST").cookie(Guard.SESSION_COOKIE, "b".repeat(64)).param("csrf", csrf);
    assertThat(status(() -> guard.checkPost(planted.http(), admit(guard, planted)))).isEqualTo(403);
    for (String origin :
        List.of(
            "null",
            "http://127.0.0.1:9999",
            "http://127.0.0.1",
            "https://127.0.0.1:8089.attacker.example",
            "http://pump.attacker.example:8089",
            "file://",
            "")) {
      Req r =
          new Req()
              .method("POST")
              .cookie(Guard.SESSION_COOKIE, session)
              .param("csrf", csrf)
              .header("Origin", origin);
      assertThat(status(() -> guard.checkPost(r.http(), admit(guard, r))))
          .as(origin)
          .isEqualTo(403);
    }
    Req sameSite =
        new Req()
            .method("POST")
            .cookie(Guard.SESSION_COOKIE, session)
            .param("csrf", csrf)
            .header("Sec-Fetch-Site", "same-site");
    assertThat(status(() -> guard.checkPost(sameSite.http(), admit(guard, sameSite))))
        .isEqualTo(403);
  }

  @Test
  void loopbackDetectionNeedsNoNameLookup() {
    assertThat(Guard.isLoopback("127.0.0.5")).isTrue();
    assertThat(Guard.isLoopback("::ffff:127.0.0.1")).isTrue();
    assertThat(Guard.isLoopback("192.168.1.1")).isFalse();
    assertThat(Guard.isLoopback("localhost.attacker.example")).isFalse();
    assertThat(Guard.isLoopback(null)).isFalse();
    assertThat(Guard.isLoopback("")).isFalse();
  }

  @Test
  void htmlEscapesEverythingThatCouldOpenMarkup() {
    assertThat(Html.esc("<script>alert('x')</script> & \"q\""))
        .isEqualTo("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
    assertThat(Html.esc(null)).isEmpty();
  }

  @Test
  void configRejectsBadValues() {
    assertThatThrownBy(() -> ConsoleConfig.builder().accessToken("short"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("accessToken");
    assertThatThrownBy(() -> ConsoleConfig.builder().accessToken("with space 1234567890"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ConsoleConfig.builder().actorName(" "))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ConsoleConfig.builder().operator("a\nb", TOKEN))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () -> ConsoleConfig.builder().operator("a", TOKEN).operator("b", TOKEN).build())
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> ConsoleConfig.builder().allowedHosts("evil.example/path"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ConsoleConfig.builder().identityHeader("X-User"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ConsoleConfig.builder().identityHeader("X-User", "proxy.example"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ConsoleConfig.builder().secret("short"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(ConsoleConfig.builder().accessToken("  ").build().accessToken()).isNull();
    assertThat(ConsoleConfig.defaults().readOnly()).isFalse();
    assertThat(ConsoleConfig.defaults().showPayloads()).isFalse();
    assertThat(ConsoleConfig.defaults().tokenless()).isTrue();
  }
}
