package org.messagepump.console;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A tiny browser for the HTTP tests: keeps cookies, never follows redirects. */
final class Http {

  private static final Pattern CSRF = Pattern.compile("name=\"csrf\" content=\"([0-9a-f]{64})\"");

  private final HttpClient client =
      HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
  private final URI base;
  final Map<String, String> cookies = new LinkedHashMap<>();

  Http(URI base) {
    this.base = base;
  }

  HttpResponse<String> get(String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).GET();
    return send(b, headers);
  }

  HttpResponse<String> send(String method, String path, String... headers) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(base.resolve(path))
            .method(method, HttpRequest.BodyPublishers.noBody());
    return send(b, headers);
  }

  /** POSTs a form; {@code form} alternates names and values. */
  HttpResponse<String> post(String path, List<String> form, String... headers) throws Exception {
    List<String> pairs = new ArrayList<>();
    for (int i = 0; i < form.size(); i += 2) {
      pairs.add(
          URLEncoder.encode(form.get(i), StandardCharsets.UTF_8)
              + "="
              + URLEncoder.encode(form.get(i + 1), StandardCharsets.UTF_8));
    }
    HttpRequest.Builder b =
        HttpRequest.newBuilder(base.resolve(path))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .POST(HttpRequest.BodyPublishers.ofString(String.join("&", pairs)));
    return send(b, headers);
  }

  /** The CSRF token of a page (and its cookie now held). */
  String csrf() throws Exception {
    HttpResponse<String> page = get("commands");
    Matcher m = CSRF.matcher(page.body());
    if (!m.find()) {
      throw new AssertionError("no CSRF token on the commands page: " + page.body());
    }
    return m.group(1);
  }

  /**
   * Sends {@code requestLine} (e.g. {@code GET /%zz HTTP/1.1}, which java.net.http would not send)
   * over a plain socket and returns the whole response: head and body.
   */
  String raw(String requestLine) throws Exception {
    try (java.net.Socket s = new java.net.Socket(base.getHost(), base.getPort())) {
      s.setSoTimeout(10_000);
      String req =
          requestLine
              + "\r\nHost: "
              + base.getHost()
              + ":"
              + base.getPort()
              + "\r\nConnection: close\r\n\r\n";
      s.getOutputStream().write(req.getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private HttpResponse<String> send(HttpRequest.Builder b, String... headers) throws Exception {
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    if (!cookies.isEmpty()) {
      List<String> c = new ArrayList<>();
      cookies.forEach((k, v) -> c.add(k + "=" + v));
      b.header("Cookie", String.join("; ", c));
    }
    HttpResponse<String> r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    for (String set : r.headers().allValues("Set-Cookie")) {
      String pair = set.split(";", 2)[0];
      int eq = pair.indexOf('=');
      cookies.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
    }
    return r;
  }
}
