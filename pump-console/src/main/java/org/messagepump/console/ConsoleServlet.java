package org.messagepump.console;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.console.internal.ActionTransactions;
import org.messagepump.console.internal.Actions;
import org.messagepump.console.internal.Audit;
import org.messagepump.console.internal.Flashes;
import org.messagepump.console.internal.Guard;
import org.messagepump.console.internal.Html;
import org.messagepump.console.internal.HttpError;
import org.messagepump.console.internal.Pages;
import org.messagepump.console.internal.Refusals;
import org.messagepump.console.internal.Refused;
import org.messagepump.console.internal.Request;
import org.messagepump.console.internal.Sampler;
import org.messagepump.console.internal.Settings;
import org.messagepump.console.internal.Stores;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.spi.Meters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operations console as one Jakarta Servlet (6.0): server-rendered pages, a small script for
 * the live charts and confirmations, and POST actions. Mount it under any path with a trailing
 * {@code /*}:
 *
 * <pre>{@code
 * ServletRegistration.Dynamic console =
 *     servletContext.addServlet("pump-console", new ConsoleServlet(dataSource, config));
 * console.addMapping("/ops/pump/*");
 * }</pre>
 *
 * <p>Safety: it answers only to allowed host names (loopback ones, and those configured), which
 * defeats DNS rebinding; without tokens or an identity header it serves direct loopback clients
 * only; every action is a POST from this very origin with a CSRF token the server signed; a
 * read-only config refuses every action; payloads are hidden unless switched on. Every action is
 * written to the audit table ({@link ConsoleAudit}) in the action's own transaction, with who did
 * it; requests refused before anyone is identified are counted and logged at most once a minute.
 */
public final class ConsoleServlet extends HttpServlet {

  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(ConsoleServlet.class);

  /** The security headers of every response (ConsoleServer's own error pages send them too). */
  static final Map<String, String> SECURITY_HEADERS =
      Map.of(
          "Content-Security-Policy",
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
              + " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
          "X-Content-Type-Options",
          "nosniff",
          // Not no-referrer: under it a browser sends "Origin: null" on the console's own form
          // POSTs, which the origin check refuses. same-origin sends nothing to other sites.
          "Referrer-Policy",
          "same-origin",
          "Cache-Control",
          "no-store",
          "X-Frame-Options",
          "DENY");

  private static final Map<String, String> STATIC =
      Map.of("/static/console.css", "text/css", "/static/console.js", "text/javascript");

  private final transient ConsoleConfig config;
  private final transient Settings settings;
  private final transient Guard guard;
  private final transient ActionTransactions transactions;
  private final transient Stores stores;
  private final transient Sampler sampler;
  private final transient Actions actions;
  private final transient Audit audit;
  private final transient Refusals refusals;
  private final transient Flashes flashes = new Flashes();

  /**
   * A console on {@code dataSource}, in the schemas of {@code config} (the drivers' defaults unless
   * set); a schema name a driver refuses throws its {@link IllegalArgumentException}.
   */
  public ConsoleServlet(DataSource dataSource, ConsoleConfig config) {
    this(dataSource, config, List.of());
  }

  /** A console that also answers to the literal addresses its server listens on. */
  ConsoleServlet(DataSource dataSource, ConsoleConfig config, Collection<String> listening) {
    this.config = Objects.requireNonNull(config, "config");
    Objects.requireNonNull(dataSource, "dataSource");
    this.settings = config.settings();
    this.guard = new Guard(settings, listening);
    this.transactions = new ActionTransactions(dataSource);
    this.stores =
        new Stores(
            transactions, config.commandsSchema(), config.eventsSchema(), config.balancerSchema());
    this.sampler = new Sampler(stores, config.meterReadings(), config.sampleInterval().toMillis());
    this.actions = new Actions(stores);
    this.audit = new Audit(dataSource, config.auditSchema(), config.auditRetention());
    this.refusals =
        new Refusals(
            config.meterReadings() == null ? Meters.none() : config.meterReadings().meters());
  }

  /** The config this console runs with. */
  public ConsoleConfig config() {
    return config;
  }

  @Override
  protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    headers(resp);
    String base = req.getContextPath() + req.getServletPath();
    String method = req.getMethod();
    Guard.Caller caller = null;
    try {
      req.getParameterMap();
    } catch (RuntimeException e) {
      // The container could not decode the query or form (not percent-encoded UTF-8).
      error(resp, 400, "the request's parameters are not percent-encoded UTF-8");
      return;
    }
    try {
      caller = guard.admit(req, resp, base);
      if (caller.redirect() != null) {
        resp.setStatus(302);
        resp.setHeader("Location", caller.redirect());
        return;
      }
      String flash =
          "GET".equals(method) ? flashes.take(caller.session(), req.getParameter("done")) : null;
      Request r =
          new Request(req, settings, base, guard.csrf(caller), caller, guard.logsIn(), flash);
      String path = r.path();
      if ("POST".equals(method) && path.startsWith("/actions/")) {
        post(r, path.substring("/actions".length()), resp);
      } else if ("POST".equals(method) && path.equals("/logout") && guard.logsIn()) {
        guard.checkPost(req, caller);
        guard.logout(req, resp, base, caller);
        html(resp, Html.bare("Logged out", "You are logged out of the console."));
      } else if ("GET".equals(method) || "HEAD".equals(method)) {
        get(r, path, resp);
      } else {
        resp.setHeader("Allow", path.startsWith("/actions/") ? "POST" : "GET, HEAD");
        throw new HttpError(405, "method " + method + " not allowed here");
      }
    } catch (Refused e) {
      // Nobody identified (or not their own page): counted, logged rate-limited, never audited.
      refusals.refused(req.getRemoteAddr(), method, String.valueOf(req.getPathInfo()), e);
      error(resp, e.status(), e.getMessage());
    } catch (HttpError e) {
      if ("POST".equals(method) && caller != null) {
        audit.refused(
            caller.actor(), caller.from(), action(req), List.of(), refusal(e.status(), e));
      }
      error(resp, e.status(), e.getMessage());
    } catch (IllegalArgumentException e) {
      // A value a driver refuses (e.g. a key over its limit): the request was bad, not the console.
      if ("POST".equals(method) && caller != null) {
        audit.refused(caller.actor(), caller.from(), action(req), List.of(), refusal(400, e));
      }
      error(resp, 400, e.getMessage());
    } catch (RuntimeException e) {
      LOG.warn("pump console: {} {} failed", method, req.getPathInfo(), e);
      if ("POST".equals(method) && caller != null) {
        audit.refused(
            caller.actor(),
            caller.from(),
            action(req),
            List.of(),
            "failed: " + e.getClass().getSimpleName());
      }
      error(resp, 500, "the console could not do that: " + e.getClass().getSimpleName());
    }
  }

  /** Stops the thread that samples the figures the pages share. */
  @Override
  public void destroy() {
    sampler.close();
    super.destroy();
  }

  private static String action(HttpServletRequest req) {
    String p = String.valueOf(req.getPathInfo());
    return p.startsWith("/actions/") ? p.substring(9).replace('/', '.') : p;
  }

  private static String refusal(int status, RuntimeException e) {
    return "refused " + status + ": " + e.getMessage();
  }

  private void get(Request r, String path, HttpServletResponse resp) throws IOException {
    if (STATIC.containsKey(path)) {
      asset(path, STATIC.get(path), resp);
      return;
    }
    if (path.equals("/api/overview")) {
      resp.setContentType("application/json");
      resp.setCharacterEncoding("UTF-8");
      resp.getOutputStream().write(sampler.json());
      return;
    }
    if (path.startsWith("/actions/")) {
      resp.setHeader("Allow", "POST");
      throw new HttpError(405, "actions are POST requests");
    }
    html(resp, Pages.render(path, r, stores, sampler, actions, audit, refusals));
  }

  private void post(Request r, String path, HttpServletResponse resp) {
    guard.checkPost(r.http(), r.caller());
    if (config.readOnly()) {
      throw new HttpError(403, "the console is read-only");
    }
    Ran ran;
    try {
      ran =
          transactions.inOne(
              Actions.isolation(path, r),
              "running a console action",
              tx -> {
                Actions.Done done = actions.run(path, r, tx);
                return new Ran(done, audit.write(tx, r.actor(), r.caller().from(), done));
              });
    } catch (DatabaseException e) {
      throw unavailable(e);
    }
    sampler.invalidate();
    Audit.log(ran.entry());
    audit.pruneSometimes();
    String next = ran.done().redirect();
    String id = flashes.put(r.caller().session(), ran.done().result());
    resp.setStatus(303);
    resp.setHeader("Location", r.base() + next + (next.contains("?") ? "&" : "?") + "done=" + id);
  }

  /** An action and its audit entry, committed together. */
  private record Ran(Actions.Done done, Audit.Entry entry) {}

  /** A database error of an action as the operator should read it. */
  private RuntimeException unavailable(DatabaseException e) {
    String state = e.sqlState() == null ? "" : e.sqlState();
    if (state.equals("42P01") && String.valueOf(e.getMessage()).contains(audit.tableName())) {
      return new HttpError(
          503,
          "the audit table "
              + audit.tableName()
              + " does not exist, and no action runs unaudited: create it with"
              + " ConsoleAudit.migrate (pump console does when it starts)");
    }
    if (state.equals("40001") || state.equals("40P01")) {
      return new HttpError(409, "the rows changed meanwhile and nothing was done: try again");
    }
    return e;
  }

  private static void html(HttpServletResponse resp, String html) throws IOException {
    resp.setContentType("text/html");
    resp.setCharacterEncoding("UTF-8");
    resp.getOutputStream().write(html.getBytes(StandardCharsets.UTF_8));
  }

  private static void asset(String path, String type, HttpServletResponse resp) throws IOException {
    try (InputStream in = ConsoleServlet.class.getResourceAsStream(path.substring(1))) {
      if (in == null) {
        throw new HttpError(404, "no asset " + path);
      }
      resp.setContentType(type);
      resp.setCharacterEncoding("UTF-8");
      in.transferTo(resp.getOutputStream());
    }
  }

  private static void headers(HttpServletResponse resp) {
    SECURITY_HEADERS.forEach(resp::setHeader);
  }

  private static void error(HttpServletResponse resp, int status, String message)
      throws IOException {
    if (resp.isCommitted()) {
      return;
    }
    resp.setStatus(status);
    html(resp, Html.error(status, message));
  }
}
