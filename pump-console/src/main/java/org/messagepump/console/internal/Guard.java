package org.messagepump.console.internal;

import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.InetAddress;
import java.net.URLDecoder;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Who may use the console, and whether a POST is really theirs.
 *
 * <p>Every request must address an allowed host ({@link Hosts}). Then, in this order: a request
 * straight from a trusted proxy is the operator its identity header names; with tokens configured,
 * the operator whose token the request carries ({@code Authorization: Bearer}, {@code ?token=} once
 * on a GET, then a signed, expiring login cookie); with the application's own security in front,
 * whoever the application says; otherwise (tokenless) only a direct loopback client: the server
 * must listen on loopback and no proxy header ({@code Forwarded}, {@code X-Forwarded-*}, {@code
 * X-Real-IP}, {@code Via}) may be present. A POST must come from this very origin and carry the
 * CSRF token: the HMAC of the session cookie and the operator under the console's secret, which
 * nobody else can make.
 */
public final class Guard {

  static final String SESSION_COOKIE = "pump_console_session";
  static final String LOGIN_COOKIE = "pump_console_login";

  /** Who asked, from where, in which session, at which host; {@code redirect} after a login. */
  public record Caller(
      String actor,
      String from,
      String session,
      Hosts.Authority authority,
      boolean secure,
      String redirect) {}

  private final Settings settings;
  private final Hosts hosts;
  private final Operators operators;
  private final Signer signer;
  private final Map<String, Long> loggedOut = new ConcurrentHashMap<>(); // nonce -> expiry (s)

  /** A guard for {@code settings}; {@code listening}: the literal addresses the server binds. */
  public Guard(Settings settings, Collection<String> listening) {
    this.settings = settings;
    List<String> names = new ArrayList<>(settings.allowedHosts());
    names.addAll(listening);
    this.hosts = new Hosts(names);
    this.operators =
        new Operators(settings.operators(), settings.identityHeader(), settings.trustedProxies());
    this.signer = new Signer(settings.secret());
  }

  /** The allowed hosts besides loopback (configured and listened on). */
  public Collection<String> allowedHosts() {
    return Collections.unmodifiableCollection(hosts.configured());
  }

  /** True when nobody is identified: only direct loopback clients are served. */
  public boolean tokenless() {
    return operators.none() && !settings.remoteWithoutToken();
  }

  /** Admits a request or throws {@link Refused}; sets the session cookie when it has none. */
  public Caller admit(HttpServletRequest req, HttpServletResponse resp, String base) {
    Hosts.Authority self = hosts.check(req);
    boolean secure = req.isSecure() || settings.tlsInFront();
    String session = session(req, resp, base, secure);
    String from = req.getRemoteAddr();
    if (operators.fromTrustedProxy(req)) {
      String client = Operators.forwardedFor(req);
      return new Caller(
          operators.fromProxy(req),
          client == null ? from : client + " via " + from,
          session,
          self,
          secure,
          null);
    }
    if (operators.hasTokens()) {
      return byToken(req, resp, base, new Caller(null, from, session, self, secure, null));
    }
    if (settings.identityHeader() != null) {
      throw new Refused(403, "this console serves operators through its proxy only");
    }
    if (!settings.remoteWithoutToken()) {
      direct(req);
    }
    return new Caller(settings.actorOf(req), from, session, self, secure, null);
  }

  /** The CSRF token of a caller's session: what its forms carry. */
  public String csrf(Caller c) {
    return signer.sign("csrf", c.session(), c.actor());
  }

  /** Refuses (403) a POST from another origin or without its session's CSRF token. */
  public void checkPost(HttpServletRequest req, Caller c) {
    hosts.checkOrigin(req, c.authority());
    if (!signer.verify(req.getParameter("csrf"), "csrf", c.session(), c.actor())) {
      throw new Refused(403, "missing or wrong CSRF token: reload the page and try again");
    }
  }

  /** Ends a login: the cookie is cleared and no longer accepted; a new session starts. */
  public void logout(HttpServletRequest req, HttpServletResponse resp, String base, Caller c) {
    String ticket = cookie(req, name(LOGIN_COOKIE, c.secure()));
    if (ticket != null) {
      String[] parts = ticket.split("\\.");
      if (parts.length == 4) {
        loggedOut.put(parts[2], Long.parseLong(parts[1].matches("\\d{1,12}") ? parts[1] : "0"));
      }
    }
    long now = System.currentTimeMillis() / 1000;
    loggedOut.values().removeIf(expiry -> expiry < now);
    resp.addCookie(cookie(LOGIN_COOKIE, "", base, c.secure(), 0));
    resp.addCookie(cookie(SESSION_COOKIE, Signer.random(32), base, c.secure(), -1));
  }

  /** True when operators log in with tokens (the pages then offer a logout). */
  public boolean logsIn() {
    return operators.hasTokens();
  }

  private Caller byToken(
      HttpServletRequest req, HttpServletResponse resp, String base, Caller anonymous) {
    String query = "GET".equals(req.getMethod()) ? req.getParameter("token") : null;
    if (query != null) {
      String name = operators.byToken(query);
      if (name == null) {
        throw new Refused(401, "wrong access token");
      }
      long expiry = System.currentTimeMillis() / 1000 + settings.loginTtl().toSeconds();
      String nonce = Signer.random(16);
      String encoded =
          Base64.getUrlEncoder()
              .withoutPadding()
              .encodeToString(name.getBytes(StandardCharsets.UTF_8));
      String mac =
          signer.sign("login", name, Long.toString(expiry), nonce, operators.fingerprint(name));
      resp.addCookie(
          cookie(
              LOGIN_COOKIE,
              encoded + "." + expiry + "." + nonce + "." + mac,
              base,
              anonymous.secure(),
              (int) settings.loginTtl().toSeconds()));
      return as(anonymous, name, withoutToken(req, base));
    }
    String header = req.getHeader("Authorization");
    if (header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      String name = operators.byToken(header.substring(7).trim());
      if (name == null) {
        throw new Refused(401, "wrong access token");
      }
      return as(anonymous, name, null);
    }
    String ticket = cookie(req, name(LOGIN_COOKIE, anonymous.secure()));
    if (ticket != null) {
      return as(anonymous, ticket(ticket), null);
    }
    throw new Refused(
        401, "an access token is required: open the console once with ?token=<your token>");
  }

  private static Caller as(Caller c, String actor, String redirect) {
    return new Caller(actor, c.from(), c.session(), c.authority(), c.secure(), redirect);
  }

  /** The operator a login cookie names; 401 when forged, expired, logged out or revoked. */
  private String ticket(String ticket) {
    String[] parts = ticket.split("\\.");
    String name = null;
    if (parts.length == 4 && parts[1].matches("\\d{1,12}")) {
      try {
        name = new String(Base64.getUrlDecoder().decode(parts[0]), StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        name = null;
      }
    }
    if (name == null
        || !operators.exists(name)
        || !signer.verify(parts[3], "login", name, parts[1], parts[2], operators.fingerprint(name))
        || loggedOut.containsKey(parts[2])) {
      throw new Refused(401, "not logged in: open the console once with ?token=<your token>");
    }
    if (Long.parseLong(parts[1]) < System.currentTimeMillis() / 1000) {
      throw new Refused(401, "your login expired: open the console again with ?token=<your token>");
    }
    return name;
  }

  /** Where a {@code ?token=} login goes next: the same URL without the token. */
  private static String withoutToken(HttpServletRequest req, String base) {
    String path = req.getRequestURI();
    if (path == null || !path.startsWith("/") || path.startsWith("//") || path.contains("\\")) {
      path = base + "/";
    }
    List<String> kept = new ArrayList<>();
    String query = req.getQueryString();
    if (query != null) {
      for (String pair : query.split("&")) {
        String rawName = pair.split("=", 2)[0];
        String name;
        try {
          name = URLDecoder.decode(rawName, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
          name = rawName;
        }
        if (!name.equals("token") && !pair.isEmpty()) {
          kept.add(pair);
        }
      }
    }
    return kept.isEmpty() ? path : path + "?" + String.join("&", kept);
  }

  /** Tokenless: only a direct loopback client of a server listening on loopback. */
  private static void direct(HttpServletRequest req) {
    if (!isLoopback(req.getRemoteAddr()) || !isLoopback(req.getLocalAddr())) {
      throw new Refused(
          403, "this console serves loopback clients only: configure operator tokens");
    }
    for (String header : Collections.list(req.getHeaderNames())) {
      String h = header.toLowerCase(Locale.ROOT);
      if (h.equals("forwarded")
          || h.startsWith("x-forwarded-")
          || h.equals("x-real-ip")
          || h.equals("via")) {
        throw new Refused(
            403,
            "a proxy forwarded this request ("
                + header
                + "): a console without tokens serves direct loopback clients only; configure"
                + " operator tokens or a trusted proxy's identity header");
      }
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

  private String session(
      HttpServletRequest req, HttpServletResponse resp, String base, boolean secure) {
    String s = cookie(req, name(SESSION_COOKIE, secure));
    if (s != null && s.matches("[0-9a-f]{64}")) {
      return s;
    }
    String fresh = Signer.random(32);
    resp.addCookie(cookie(SESSION_COOKIE, fresh, base, secure, -1));
    return fresh;
  }

  /** {@code __Host-} cookies when TLS is in front: Secure, Path=/, bound to this very host. */
  private static String name(String cookie, boolean secure) {
    return secure ? "__Host-" + cookie : cookie;
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

  private static Cookie cookie(String name, String value, String base, boolean secure, int maxAge) {
    Cookie c = new Cookie(name(name, secure), value);
    c.setHttpOnly(true);
    c.setSecure(secure);
    c.setPath(secure || base.isEmpty() ? "/" : base);
    c.setMaxAge(maxAge);
    c.setAttribute("SameSite", "Strict");
    return c;
  }
}
