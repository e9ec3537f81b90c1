package org.messagepump.console.internal;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * HTML escaping and the page frame. Hand-written on purpose: five characters to escape do not
 * justify a template engine and its dependencies; every value written into a page goes through
 * {@link #esc}.
 */
public final class Html {

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);

  private Html() {}

  /**
   * Escapes text for element content and quoted attribute values; NUL and the other control
   * characters (but tab and line breaks) become U+FFFD, so none reaches the page raw.
   */
  public static String esc(Object value) {
    if (value == null) {
      return "";
    }
    String s = value.toString();
    StringBuilder b = new StringBuilder(s.length() + 16);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '&' -> b.append("&amp;");
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default ->
            b.append(c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f ? '\uFFFD' : c);
      }
    }
    return b.toString();
  }

  /** Percent-encodes a query parameter value. */
  public static String url(String value) {
    return java.net.URLEncoder.encode(value, java.nio.charset.StandardCharsets.UTF_8);
  }

  static String time(Instant t) {
    return t == null ? "" : TIME.format(t) + " UTC";
  }

  static String age(Duration d) {
    if (d == null) {
      return "";
    }
    long s = d.toSeconds();
    if (s < 120) {
      return s + " s";
    }
    if (s < 7200) {
      return (s / 60) + " min";
    }
    return (s / 3600) + " h";
  }

  /** The page around a body: navigation, flash message, scripts. */
  static String page(Request r, String active, String heading, String body) {
    StringBuilder b = new StringBuilder(body.length() + 2048);
    b.append("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .append("<meta name=\"csrf\" content=\"")
        .append(esc(r.csrf()))
        .append("\"><title>")
        .append(esc(heading))
        .append(" · ")
        .append(esc(r.config().title()))
        .append("</title><link rel=\"stylesheet\" href=\"")
        .append(esc(r.base()))
        .append("/static/console.css\"><script defer src=\"")
        .append(esc(r.base()))
        .append("/static/console.js\"></script></head><body data-base=\"")
        .append(esc(r.base()))
        .append("\"><header><span class=\"brand\">")
        .append(esc(r.config().title()))
        .append("</span><nav>");
    nav(b, r, active, "", "Overview");
    nav(b, r, active, "/commands", "Commands");
    nav(b, r, active, "/events", "Event handlers");
    nav(b, r, active, "/balancer", "Balancer groups");
    nav(b, r, active, "/jobs", "Jobs");
    nav(b, r, active, "/audit", "Audit log");
    b.append("</nav><span class=\"mode\">");
    if (r.config().readOnly()) {
      b.append("<span class=\"badge\">read-only</span> ");
    }
    b.append(r.config().showPayloads() ? "payloads shown" : "payloads hidden")
        .append(" · <span id=\"actor\">")
        .append(esc(r.actor()))
        .append("</span>");
    if (r.logsIn()) {
      b.append(" <form method=\"post\" class=\"inline\" action=\"")
          .append(esc(r.base() + "/logout"))
          .append("\">")
          .append(hidden("csrf", r.csrf()))
          .append("<button type=\"submit\" id=\"logout\">Log out</button></form>");
    }
    b.append("</span></header><main><h1>").append(esc(heading)).append("</h1>");
    if (r.flash() != null) {
      b.append("<p class=\"flash\" id=\"flash\">").append(esc(r.flash())).append("</p>");
    }
    b.append(body).append("</main></body></html>");
    return b.toString();
  }

  /** A page without the console's frame (errors, logout): no script, no navigation. */
  public static String bare(String heading, String text) {
    return "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
        + esc(heading)
        + "</title></head><body><h1>"
        + esc(heading)
        + "</h1><p id=\"error\">"
        + esc(text)
        + "</p></body></html>";
  }

  /** The page of a refused or failed request. */
  public static String error(int status, String message) {
    return bare(String.valueOf(status), message)
        .replace("</body>", "<p>Go back, reload the page and try again.</p></body>");
  }

  private static void nav(StringBuilder b, Request r, String active, String path, String label) {
    b.append("<a href=\"")
        .append(esc(r.base() + (path.isEmpty() ? "/" : path)))
        .append('"')
        .append(path.equals(active) ? " class=\"active\"" : "")
        .append('>')
        .append(esc(label))
        .append("</a>");
  }

  /** A POST form with the CSRF field; {@code confirm} is asked in the browser before sending. */
  static String form(Request r, String action, String confirm, String fields, String button) {
    return "<form method=\"post\" class=\"inline\" action=\""
        + esc(r.base() + "/actions/" + action)
        + "\""
        + (confirm == null ? "" : " data-confirm=\"" + esc(confirm) + "\"")
        + "><input type=\"hidden\" name=\"csrf\" value=\""
        + esc(r.csrf())
        + "\">"
        + fields
        + "<button type=\"submit\">"
        + esc(button)
        + "</button></form>";
  }

  /**
   * A stored text (a key, a group, a handler, a type) as a hidden field {@code <name>64}: its UTF-8
   * bytes in base64url, so it comes back exactly as stored. A browser would turn a newline in a
   * plain field into CR LF, and the HTML parser a CR into a newline.
   */
  static String text(String name, String value) {
    return hidden(
        name + "64",
        java.util.Base64.getUrlEncoder()
            .withoutPadding()
            .encodeToString(value.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
  }

  static String hidden(String name, Object value) {
    return "<input type=\"hidden\" name=\"" + esc(name) + "\" value=\"" + esc(value) + "\">";
  }

  /** A live sparkline of one series (drawn by console.js from the overview samples). */
  static String spark(String series) {
    return "<svg class=\"spark\" viewBox=\"0 0 120 24\" preserveAspectRatio=\"none\" data-series=\""
        + esc(series)
        + "\"><polyline points=\"\"/></svg>";
  }

  /** A number that console.js refreshes from the latest sample of a series. */
  static String live(String series, Object value) {
    return "<span data-value=\"" + esc(series) + "\">" + esc(value) + "</span>";
  }
}
