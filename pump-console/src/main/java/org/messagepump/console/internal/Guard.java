package org.messagepump.console.internal;

import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Who may use the console: loopback clients, or anyone with the access token; every POST carries
 * the CSRF token that a cookie holds (double submit, SameSite=Strict) and, when the browser says
 * where it comes from, an Origin of this very host.
 */
public final class Guard {

  static final String TOKEN_COOKIE = "pump_console_token";
  static final String CSRF_COOKIE = "pump_console_csrf";
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Settings config;

  public Guard(Settings config) {
    this.config = config;
  }

  /**
   * Checks who is asking; throws 401/403. Returns true when the request carried the token as a
   * query parameter (the caller then sets the cookie and redirects to the clean URL).
   */
  public boolean admit(HttpServletRequest req) {
    String token = config.accessToken();
    if (token == null) {
      if (!config.remoteWithoutToken() && !isLoopback(req.getRemoteAddr())) {
        throw new HttpError(
            403, "this console serves loopback clients only: configure an access token");
      }
      return false;
    }
    String query = req.getParameter("token");
    if (query != null && "GET".equals(req.getMethod())) {
      if (equal(query, token)) {
        return true;
      }
      throw new HttpError(401, "wrong access token");
    }
    String header = req.getHeader("Authorization");
    if (header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      if (equal(header.substring(7).trim(), token)) {
        return false;
      }
      throw new HttpError(401, "wrong access token");
    }
    String cookie = cookie(req, TOKEN_COOKIE);
    if (cookie != null && equal(cookie, token)) {
      return false;
    }
    throw new HttpError(
        401, "an access token is required: open the console once with ?token=<token>");
  }

  /** Sets the token cookie (after {@code ?token=} was accepted). */
  public void rememberToken(HttpServletRequest req, HttpServletResponse resp, String base) {
    resp.addCookie(cookie(TOKEN_COOKIE, config.accessToken(), base, req.isSecure()));
  }

  /** The request's CSRF token, made (and set as a cookie) when it has none yet. */
  public String csrf(HttpServletRequest req, HttpServletResponse resp, String base) {
    String c = cookie(req, CSRF_COOKIE);
    if (c != null && c.matches("[0-9a-f]{64}")) {
      return c;
    }
    byte[] bytes = new byte[32];
    RANDOM.nextBytes(bytes);
    String fresh = HexFormat.of().formatHex(bytes);
    resp.addCookie(cookie(CSRF_COOKIE, fresh, base, req.isSecure()));
    return fresh;
  }

  /** Refuses a POST without a matching CSRF token or from another origin (403). */
  public void checkPost(HttpServletRequest req) {
    String origin = req.getHeader("Origin");
    if (origin != null && !origin.equals("null") && !sameOrigin(origin, req)) {
      throw new HttpError(403, "cross-origin request refused");
    }
    String cookie = cookie(req, CSRF_COOKIE);
    String field = req.getParameter("csrf");
    if (cookie == null || field == null || !equal(cookie, field)) {
      throw new HttpError(403, "missing or wrong CSRF token: reload the page and try again");
    }
  }

  private static boolean sameOrigin(String origin, HttpServletRequest req) {
    try {
      URI o = URI.create(origin);
      int port = o.getPort() == -1 ? ("https".equals(o.getScheme()) ? 443 : 80) : o.getPort();
      return req.getServerName().equalsIgnoreCase(o.getHost()) && req.getServerPort() == port;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** True for 127.0.0.0/8, ::1 and IPv4-mapped loopback addresses. */
  public static boolean isLoopback(String address) {
    if (address == null || address.isBlank() || !address.matches("[0-9a-fA-F:.\\[\\]%a-z]+")) {
      return false;
    }
    try {
      // A literal address: no name lookup happens.
      return InetAddress.getByName(address.replace("[", "").replace("]", "")).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  private static boolean equal(String a, String b) {
    return MessageDigest.isEqual(
        a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }

  private static String cookie(HttpServletRequest req, String name) {
    Cookie[] cookies = req.getCookies();
    if (cookies == null) {
      return null;
    }
    for (Cookie c : cookies) {
      if (name.equals(c.getName())) {
        return c.getValue();
      }
    }
    return null;
  }

  private static Cookie cookie(String name, String value, String base, boolean secure) {
    Cookie c = new Cookie(name, value);
    c.setHttpOnly(true);
    c.setSecure(secure);
    c.setPath(base.isEmpty() ? "/" : base);
    c.setAttribute("SameSite", "Strict");
    return c;
  }
}
