package org.messagepump.console.internal;

import jakarta.servlet.http.HttpServletRequest;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Who an operator is: the name of the token they present (several named tokens), or the name a
 * trusted proxy puts in a configured header. Tokens are compared in constant time, each against
 * every configured one.
 */
final class Operators {

  /** An operator's or proxy-given name: printable, no control characters, 1 to 100 characters. */
  private static final Pattern NAME = Pattern.compile("[^\\p{Cntrl}\\u2028\\u2029]{1,100}");

  private final Map<String, String> tokens; // name -> token
  private final String identityHeader;
  private final List<Network> proxies = new ArrayList<>();

  Operators(Map<String, String> tokens, String identityHeader, List<String> trustedProxies) {
    this.tokens = new LinkedHashMap<>(tokens);
    this.identityHeader = identityHeader;
    for (String p : trustedProxies) {
      proxies.add(Network.parse(p));
    }
  }

  /** True when nobody is identified: no tokens and no identity header. */
  boolean none() {
    return tokens.isEmpty() && identityHeader == null;
  }

  boolean hasTokens() {
    return !tokens.isEmpty();
  }

  boolean exists(String name) {
    return tokens.containsKey(name);
  }

  /** The name of the operator holding {@code token}, or null. */
  String byToken(String token) {
    String found = null;
    for (Map.Entry<String, String> e : tokens.entrySet()) {
      if (Signer.equal(e.getValue(), token) && found == null) {
        found = e.getKey(); // no early exit: every token is compared
      }
    }
    return found;
  }

  /** A fingerprint of an operator's token: a login cookie is void once the token changes. */
  String fingerprint(String name) {
    String token = tokens.get(name);
    return token == null ? "" : HexFormat.of().formatHex(Signer.sha256(token));
  }

  /** True when the request comes straight from a configured proxy that names operators. */
  boolean fromTrustedProxy(HttpServletRequest req) {
    if (identityHeader == null) {
      return false;
    }
    byte[] remote = address(req.getRemoteAddr());
    return remote != null && proxies.stream().anyMatch(n -> n.contains(remote));
  }

  /** The operator a trusted proxy names; 401 when it names none or a malformed one. */
  String fromProxy(HttpServletRequest req) {
    String name = req.getHeader(identityHeader);
    if (name == null || name.isBlank()) {
      throw new Refused(401, "the proxy did not name the operator (header " + identityHeader + ")");
    }
    name = name.trim();
    if (!NAME.matcher(name).matches()) {
      throw new Refused(401, "the operator name the proxy sent is not a valid name");
    }
    return name;
  }

  /** The client as a trusted proxy saw it: the last {@code X-Forwarded-For} entry, if any. */
  static String forwardedFor(HttpServletRequest req) {
    String xff = req.getHeader("X-Forwarded-For");
    if (xff == null || xff.isBlank()) {
      return null;
    }
    String[] hops = xff.split(",");
    String last = hops[hops.length - 1].trim();
    return last.matches("[0-9A-Fa-f:.\\[\\]]{1,64}") ? last : null;
  }

  private static byte[] address(String literal) {
    if (literal == null || !literal.matches("[0-9A-Fa-f:.\\[\\]]{1,64}")) {
      return null; // only literals: never a name lookup
    }
    try {
      return InetAddress.getByName(literal.replace("[", "").replace("]", "")).getAddress();
    } catch (UnknownHostException e) {
      return null;
    }
  }

  /** An address or a CIDR block. */
  record Network(byte[] address, int bits) {

    static Network parse(String text) {
      String t = text.trim();
      int slash = t.indexOf('/');
      byte[] a = Operators.address(slash < 0 ? t : t.substring(0, slash));
      if (a == null) {
        throw new IllegalArgumentException(
            "a trusted proxy must be an IP address or a CIDR block such as 10.0.0.0/8: " + text);
      }
      int bits = a.length * 8;
      if (slash >= 0) {
        String b = t.substring(slash + 1);
        if (!b.matches("\\d{1,3}") || Integer.parseInt(b) > a.length * 8) {
          throw new IllegalArgumentException("a trusted proxy's prefix length is wrong: " + text);
        }
        bits = Integer.parseInt(b);
      }
      return new Network(a, bits);
    }

    boolean contains(byte[] other) {
      if (other.length != address.length) {
        return false;
      }
      for (int i = 0; i < bits; i++) {
        int mask = 0x80 >>> (i % 8);
        if ((address[i / 8] & mask) != (other[i / 8] & mask)) {
          return false;
        }
      }
      return true;
    }
  }
}
