package org.messagepump.console.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import java.lang.reflect.Proxy;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.messagepump.console.ConsoleConfig;

class GuardTest {

  /** A request from {@code remote} with these headers, parameters and cookies. */
  static HttpServletRequest request(
      String method,
      String remote,
      Map<String, String> headers,
      Map<String, String> params,
      Cookie... cookies) {
    return (HttpServletRequest)
        Proxy.newProxyInstance(
            GuardTest.class.getClassLoader(),
            new Class<?>[] {HttpServletRequest.class},
            (proxy, m, args) ->
                switch (m.getName()) {
                  case "getMethod" -> method;
                  case "getRemoteAddr" -> remote;
                  case "getHeader" -> headers.get((String) args[0]);
                  case "getParameter" -> params.get((String) args[0]);
                  case "getCookies" -> cookies.length == 0 ? null : cookies;
                  case "getServerName" -> "127.0.0.1";
                  case "getServerPort" -> 8089;
                  case "getRemoteUser" -> null;
                  default -> throw new UnsupportedOperationException(m.getName());
                });
  }

  static Guard guard(ConsoleConfig c) {
    return new Guard(
        new Settings(
            c.readOnly(),
            c.showPayloads(),
            c.accessToken(),
            c.remoteWithoutToken(),
            c.title(),
            c.meterRegistry(),
            c::actorOf));
  }

  @Test
  void withoutATokenOnlyLoopbackClientsAreServed() {
    Guard guard = guard(ConsoleConfig.defaults());
    assertThat(guard.admit(request("GET", "127.0.0.1", Map.of(), Map.of()))).isFalse();
    assertThat(guard.admit(request("GET", "::1", Map.of(), Map.of()))).isFalse();
    assertThat(guard.admit(request("GET", "0:0:0:0:0:0:0:1", Map.of(), Map.of()))).isFalse();
    assertThatThrownBy(() -> guard.admit(request("GET", "10.1.2.3", Map.of(), Map.of())))
        .isInstanceOf(HttpError.class)
        .hasMessageContaining("loopback");
    Guard trusting = guard(ConsoleConfig.builder().remoteWithoutToken(true).build());
    assertThat(trusting.admit(request("GET", "10.1.2.3", Map.of(), Map.of()))).isFalse();
  }

  @Test
  void aTokenIsCheckedFromHeaderQueryOrCookie() {
    String token = "abcdefghijklmnopqrstuvwxyz";
    Guard guard = guard(ConsoleConfig.builder().accessToken(token).build());
    assertThat(
            guard.admit(
                request("GET", "10.1.2.3", Map.of("Authorization", "Bearer " + token), Map.of())))
        .isFalse();
    assertThat(guard.admit(request("GET", "10.1.2.3", Map.of(), Map.of("token", token)))).isTrue();
    assertThat(
            guard.admit(
                request(
                    "GET", "10.1.2.3", Map.of(), Map.of(), new Cookie(Guard.TOKEN_COOKIE, token))))
        .isFalse();
    assertThatThrownBy(() -> guard.admit(request("GET", "127.0.0.1", Map.of(), Map.of())))
        .isInstanceOf(HttpError.class)
        .extracting(e -> ((HttpError) e).status())
        .isEqualTo(401);
    // A token in a POST's query does not log in.
    assertThatThrownBy(
            () -> guard.admit(request("POST", "127.0.0.1", Map.of(), Map.of("token", token))))
        .isInstanceOf(HttpError.class);
  }

  @Test
  void postsNeedTheCookiesCsrfTokenAndTheSameOrigin() {
    Guard guard = guard(ConsoleConfig.defaults());
    String csrf = "a".repeat(64);
    Cookie cookie = new Cookie(Guard.CSRF_COOKIE, csrf);
    guard.checkPost(request("POST", "127.0.0.1", Map.of(), Map.of("csrf", csrf), cookie));
    guard.checkPost(
        request(
            "POST",
            "127.0.0.1",
            Map.of("Origin", "http://127.0.0.1:8089"),
            Map.of("csrf", csrf),
            cookie));
    assertThatThrownBy(
            () -> guard.checkPost(request("POST", "127.0.0.1", Map.of(), Map.of(), cookie)))
        .isInstanceOf(HttpError.class);
    assertThatThrownBy(
            () -> guard.checkPost(request("POST", "127.0.0.1", Map.of(), Map.of("csrf", csrf))))
        .isInstanceOf(HttpError.class);
    assertThatThrownBy(
            () ->
                guard.checkPost(
                    request(
                        "POST",
                        "127.0.0.1",
                        Map.of("Origin", "http://127.0.0.1:9999"),
                        Map.of("csrf", csrf),
                        cookie)))
        .hasMessageContaining("cross-origin");
  }

  @Test
  void loopbackDetectionNeedsNoNameLookup() {
    assertThat(Guard.isLoopback("127.0.0.5")).isTrue();
    assertThat(Guard.isLoopback("::ffff:127.0.0.1")).isTrue();
    assertThat(Guard.isLoopback("192.168.1.1")).isFalse();
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
    assertThat(ConsoleConfig.builder().accessToken("  ").build().accessToken()).isNull();
    assertThat(ConsoleConfig.defaults().readOnly()).isFalse();
    assertThat(ConsoleConfig.defaults().showPayloads()).isFalse();
  }
}
