package org.messagepump.console.internal;

import jakarta.servlet.http.HttpServletRequest;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Collection;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The names a request may address the console by, and the origins a POST may come from.
 *
 * <p>A browser sends the name it resolved in {@code Host}; a page whose name was rebound to this
 * machine (DNS rebinding) still sends its own name, so a request is served only when its {@code
 * Host} is a loopback name or address ({@code localhost}, {@code *.localhost}, 127.0.0.0/8, {@code
 * [::1]}), an address the console listens on, or a configured name. A POST's {@code Origin}, when
 * sent, must be that very host and port; {@code Origin: null} (sandboxed frames, some redirects)
 * counts as cross-origin, and so does a {@code Sec-Fetch-Site} other than {@code same-origin}.
 */
public final class Hosts {

  /** A host name or address as it may appear in {@code Host}: no user info, path or space. */
  private static final Pattern NAME = Pattern.compile("[a-z0-9._\\-]{1,253}|\\[[0-9a-f:.%]+\\]");

  private final Set<String> allowed = new TreeSet<>();

  /**
   * The allow-list: loopback names and addresses always, plus {@code names} (configured names and
   * the addresses the server listens on).
   */
  public Hosts(Collection<String> names) {
    for (String n : names) {
      allowed.add(normalize(n));
    }
  }

  /** A configured name as the allow-list keeps it; IllegalArgumentException when malformed. */
  public static String normalize(String name) {
    if (name == null) {
      throw new IllegalArgumentException("an allowed host must not be null");
    }
    String n = name.trim().toLowerCase(Locale.ROOT);
    if (n.endsWith(".")) {
      n = n.substring(0, n.length() - 1);
    }
    if (n.indexOf(':') >= 0 && !n.startsWith("[")) {
      n = "[" + n + "]"; // a bare IPv6 literal
    }
    if (!NAME.matcher(n).matches()) {
      throw new IllegalArgumentException(
          "an allowed host must be a host name or an IP address without port or path: " + name);
    }
    return n;
  }

  /** The names configured or added (loopback ones are allowed without being listed). */
  public Set<String> configured() {
    return Set.copyOf(allowed);
  }

  /** True when {@code host} (a name or literal, no port) is on the allow-list. */
  public boolean allowed(String host) {
    String h;
    try {
      h = normalize(host);
    } catch (IllegalArgumentException e) {
      return false;
    }
    if (h.equals("localhost") || h.endsWith(".localhost") || isLoopbackLiteral(h)) {
      return true;
    }
    return allowed.contains(h);
  }

  /**
   * The request's host and port, from {@code Host} (or, for an HTTP/1.0 request without one, the
   * address it reached); throws 421 when that host is not allowed.
   */
  public Authority check(HttpServletRequest req) {
    String header = req.getHeader("Host");
    Authority a =
        header == null || header.isBlank()
            ? new Authority(literal(req.getLocalAddr()), req.getLocalPort())
            : Authority.parse(header);
    if (a == null || !allowed(a.host())) {
      throw new Refused(
          421,
          "this console does not answer to the host name "
              + (header == null ? "(none)" : header)
              + ": add it to the allowed hosts if it is yours");
    }
    return a;
  }

  /**
   * Refuses (403) a request whose {@code Origin} is not this console, or whose {@code
   * Sec-Fetch-Site} says it comes from another site. An absent Origin (a client that is not a
   * browser) passes; such a request still needs the CSRF token.
   */
  public void checkOrigin(HttpServletRequest req, Authority self) {
    String site = req.getHeader("Sec-Fetch-Site");
    if (site != null && !site.equalsIgnoreCase("same-origin")) {
      throw new Refused(403, "cross-origin request refused (Sec-Fetch-Site: " + site + ")");
    }
    String origin = req.getHeader("Origin");
    if (origin == null) {
      return;
    }
    if (!sameOrigin(origin, self)) {
      throw new Refused(403, "cross-origin request refused");
    }
  }

  private boolean sameOrigin(String origin, Authority self) {
    URI o;
    try {
      o = new URI(origin.trim());
    } catch (java.net.URISyntaxException e) {
      return false; // "null" and anything else that is not scheme://host[:port]
    }
    String scheme = o.getScheme() == null ? "" : o.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || o.getHost() == null) {
      return false;
    }
    String host;
    try {
      host = normalize(o.getHost());
    } catch (IllegalArgumentException e) {
      return false;
    }
    if (!allowed(host) || !host.equals(normalize(self.host()))) {
      return false;
    }
    int port = o.getPort() == -1 ? (scheme.equals("https") ? 443 : 80) : o.getPort();
    // Without a port in Host, the browser addressed the default port of the origin's scheme (a
    // TLS proxy in front sends https://name and Host: name).
    return self.port() == -1 ? o.getPort() == -1 : self.port() == port;
  }

  private static boolean isLoopbackLiteral(String h) {
    String bare = h.startsWith("[") ? h.substring(1, h.length() - 1) : h;
    if (!bare.matches("[0-9.]+") && !bare.matches("[0-9a-f:.]+")) {
      return false;
    }
    if (bare.matches("[0-9.]+") && !bare.matches("\\d{1,3}(\\.\\d{1,3}){3}")) {
      return false; // "127.1" and other short forms: not what a browser sends
    }
    return Guard.isLoopback(bare);
  }

  private static String literal(String address) {
    if (address == null) {
      return "";
    }
    return address.indexOf(':') >= 0 ? "[" + address + "]" : address;
  }

  /** The addresses of this machine's interfaces, for a server listening on all of them. */
  public static Set<String> localAddresses() {
    Set<String> out = new TreeSet<>();
    try {
      var interfaces = java.net.NetworkInterface.getNetworkInterfaces();
      while (interfaces != null && interfaces.hasMoreElements()) {
        var addresses = interfaces.nextElement().getInetAddresses();
        while (addresses.hasMoreElements()) {
          InetAddress a = addresses.nextElement();
          String text = a.getHostAddress();
          int zone = text.indexOf('%');
          out.add(literal(zone >= 0 ? text.substring(0, zone) : text));
        }
      }
    } catch (java.net.SocketException e) {
      // no interfaces to list: the configured names and loopback remain
    }
    return out;
  }

  /** Whether {@code address} (a literal) is a wildcard address, such as 0.0.0.0 or ::. */
  public static boolean isWildcard(String address) {
    try {
      return InetAddress.getByName(address).isAnyLocalAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  /** A host and port as a request names them; port -1 when the request names none. */
  public record Authority(String host, int port) {

    /** Parses {@code host[:port]} or {@code [v6][:port]}; null when malformed. */
    static Authority parse(String header) {
      String h = header.trim();
      int port = -1;
      String host;
      if (h.startsWith("[")) {
        int end = h.indexOf(']');
        if (end < 0) {
          return null;
        }
        host = h.substring(0, end + 1);
        String rest = h.substring(end + 1);
        if (!rest.isEmpty()) {
          if (!rest.startsWith(":")) {
            return null;
          }
          port = port(rest.substring(1));
        }
      } else {
        int colon = h.lastIndexOf(':');
        if (colon >= 0 && h.indexOf(':') != colon) {
          return null;
        }
        host = colon >= 0 ? h.substring(0, colon) : h;
        if (colon >= 0) {
          port = port(h.substring(colon + 1));
        }
      }
      if (port == -2 || host.isEmpty()) {
        return null;
      }
      return new Authority(host, port);
    }

    private static int port(String s) {
      if (!s.matches("\\d{1,5}")) {
        return -2;
      }
      int p = Integer.parseInt(s);
      return p > 65_535 ? -2 : p;
    }
  }
}
