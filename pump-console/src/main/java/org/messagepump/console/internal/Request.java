package org.messagepump.console.internal;

import jakarta.servlet.http.HttpServletRequest;

/**
 * One admitted request as the pages see it: the config, where the console is mounted, the CSRF
 * token of the caller's session, who the caller is, whether operators log in (and so out), and the
 * message the caller's last action left for this page (or null).
 */
public record Request(
    HttpServletRequest http,
    Settings config,
    String base,
    String csrf,
    Guard.Caller caller,
    boolean logsIn,
    String flash) {

  /** Who asked, as the audit trail names them. */
  public String actor() {
    return caller.actor();
  }

  /** The path below the console's mount point, "" for the overview. */
  public String path() {
    String p = http.getPathInfo();
    if (p == null || p.equals("/")) {
      return "";
    }
    return p.endsWith("/") ? p.substring(0, p.length() - 1) : p;
  }

  /** A required, non-blank parameter of at most {@code max} characters. */
  String required(String name, int max) {
    String v = optional(name, max);
    if (v == null) {
      throw HttpError.badRequest("missing parameter " + name);
    }
    return v;
  }

  /**
   * An optional parameter: null when absent or blank; 400 when longer than {@code max} characters
   * or holding NUL (which no driver stores). A form's stored texts come as {@code <name>64}
   * (base64url of their UTF-8, see {@code Html.text}), a plain {@code <name>} wins.
   */
  String optional(String name, int max) {
    String v = http.getParameter(name);
    if (v == null || v.isBlank()) {
      v = base64(name);
    }
    if (v == null || v.isBlank()) {
      return null;
    }
    if (v.length() > max) {
      throw HttpError.badRequest("parameter " + name + " is longer than " + max + " characters");
    }
    if (v.indexOf('\0') >= 0) {
      throw HttpError.badRequest("parameter " + name + " holds NUL");
    }
    return v;
  }

  private String base64(String name) {
    String encoded = http.getParameter(name + "64");
    if (encoded == null) {
      return null;
    }
    try {
      byte[] bytes = java.util.Base64.getUrlDecoder().decode(encoded);
      return java.nio.charset.StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
          .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
          .decode(java.nio.ByteBuffer.wrap(bytes))
          .toString();
    } catch (IllegalArgumentException | java.nio.charset.CharacterCodingException e) {
      throw HttpError.badRequest("parameter " + name + "64 is not base64url of UTF-8 text");
    }
  }

  long longParam(String name) {
    String v = required(name, 20);
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw HttpError.badRequest("parameter " + name + " is not a number: " + v);
    }
  }

  int intParam(String name, int dflt, int min, int max) {
    String v = optional(name, 10);
    if (v == null) {
      return dflt;
    }
    try {
      int n = Integer.parseInt(v.trim());
      if (n < min || n > max) {
        throw HttpError.badRequest(
            "parameter " + name + " must be between " + min + " and " + max + ": " + n);
      }
      return n;
    } catch (NumberFormatException e) {
      throw HttpError.badRequest("parameter " + name + " is not a number: " + v);
    }
  }
}
