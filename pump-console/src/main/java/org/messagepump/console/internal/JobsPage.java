package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;
import static org.messagepump.console.internal.Html.form;
import static org.messagepump.console.internal.Html.hidden;
import static org.messagepump.console.internal.Html.text;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.TreeSet;
import java.util.UUID;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.commands.DeadLetter;
import org.messagepump.commands.PendingCommand;
import org.messagepump.commands.QueueDepth;
import org.messagepump.core.Pause;
import org.messagepump.eventstream.HandlerLag;

/**
 * The operator's job view: per driver what is paused (with pause and resume), the command queue's
 * queued, scheduled, failing and parked work, search by type, key and message id, one message's
 * detail with its attempts, and what a bulk action on a type will touch before it runs.
 */
final class JobsPage {

  /** Rows a page of jobs shows. */
  static final int PAGE = 50;

  /** Ids a bulk preview lists. */
  static final int PREVIEW = 20;

  /** Without a type chosen, the queue's lists merge the pages of at most this many types. */
  static final int MAX_MERGED_TYPES = 30;

  /** Messages of a balancer key the detail lists. */
  static final int KEY_MESSAGES = 50;

  private JobsPage() {}

  static String render(Request r, Stores stores, Sampler.Snapshot snapshot) {
    String driver = driver(r);
    StringBuilder b = new StringBuilder();
    b.append("<nav class=\"tabs\" id=\"drivers\">");
    for (String d : List.of("commands", "events", "balancer")) {
      b.append("<a href=\"")
          .append(esc(r.base() + "/jobs?driver=" + d))
          .append('"')
          .append(d.equals(driver) ? " class=\"active\"" : "")
          .append('>')
          .append(
              switch (d) {
                case "commands" -> "Command queue";
                case "events" -> "Event handlers";
                default -> "Balancer groups";
              })
          .append("</a> ");
    }
    b.append("</nav>");
    pauses(b, r, driver, snapshot);
    switch (driver) {
      case "commands" -> commands(b, r, stores, snapshot);
      case "events" -> events(b, r, stores, snapshot);
      default -> balancer(b, r, stores, snapshot);
    }
    return Html.page(r, "/jobs", "Jobs", b.toString());
  }

  private static String driver(Request r) {
    String driver = r.optional("driver", 20);
    if (driver == null) {
      return "commands";
    }
    if (!List.of("commands", "events", "balancer").contains(driver)) {
      throw HttpError.badRequest("driver must be commands, events or balancer");
    }
    return driver;
  }

  // ---- pauses ---------------------------------------------------------------------------------

  private static void pauses(StringBuilder b, Request r, String driver, Sampler.Snapshot snapshot) {
    Sampler.Pauses pauses = snapshot.pausesOrThrow();
    List<Pause> paused = new ArrayList<>();
    TreeSet<String> names = new TreeSet<>();
    String what;
    switch (driver) {
      case "commands" -> {
        what = "command type";
        paused.addAll(pauses.types());
        names.addAll(snapshot.depthOrThrow().byType().keySet());
      }
      case "events" -> {
        what = "event handler";
        paused.addAll(pauses.handlers());
        for (HandlerLag h : snapshot.handlersOrThrow()) {
          names.add(h.handlerKey());
        }
      }
      default -> {
        what = "balancer group";
        paused.addAll(pauses.groups());
        for (GroupStats g : snapshot.groupsOrThrow()) {
          names.add(g.group());
        }
      }
    }
    b.append("<section id=\"pauses\"><h2>Paused</h2><p class=\"note\">A paused ")
        .append(what)
        .append(" is not delivered by any process until it is resumed; new work still arrives.")
        .append("</p><table id=\"paused\"><thead><tr><th>")
        .append(what)
        .append("</th><th>paused</th><th>reason</th><th></th></tr></thead><tbody>");
    for (Pause p : paused) {
      names.remove(p.name());
      b.append("<tr><td class=\"key\">")
          .append(esc(p.name()))
          .append("</td><td>")
          .append(Html.time(p.pausedAt()))
          .append("</td><td class=\"reason\">")
          .append(p.reason() == null ? "" : esc(p.reason()))
          .append("</td><td>");
      if (!r.config().readOnly()) {
        b.append(
            form(
                r,
                "pauses/resume",
                "Resume " + what + " " + p.name() + "? Its work is delivered again.",
                hidden("driver", driver) + text("name", p.name()),
                "Resume"));
      }
      b.append("</td></tr>");
    }
    if (paused.isEmpty()) {
      b.append("<tr><td colspan=\"4\" class=\"note\">Nothing paused.</td></tr>");
    }
    b.append("</tbody></table>");
    if (!r.config().readOnly() && !names.isEmpty()) {
      StringBuilder select =
          new StringBuilder("<label>")
              .append(esc(what))
              .append(" <select name=\"name64\" id=\"pause-name\">");
      for (String n : names) {
        select
            .append("<option value=\"")
            .append(esc(b64(n)))
            .append("\">")
            .append(esc(n.length() > 80 ? n.substring(0, 79) + "…" : n))
            .append("</option>");
      }
      select
          .append("</select></label> <label>reason <input name=\"reason\" maxlength=\"500\"")
          .append(" autocomplete=\"off\"></label>");
      b.append("<div id=\"pause-form\">")
          .append(
              form(
                  r,
                  "pauses/pause",
                  "Pause this " + what + " in every process?",
                  hidden("driver", driver) + select,
                  "Pause"))
          .append("</div>");
    }
    b.append("</section>");
  }

  private static String b64(String s) {
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  // ---- the command queue ----------------------------------------------------------------------

  private static void commands(
      StringBuilder b, Request r, Stores stores, Sampler.Snapshot snapshot) {
    QueueDepth depth = snapshot.depthOrThrow();
    String find = r.optional("find", CommandsPage.MAX_FIND);
    String by = r.optional("by", 3);
    if (by != null && !by.equals("id") && !by.equals("key")) {
      throw HttpError.badRequest("by must be id or key");
    }
    boolean byKey = "key".equals(by);
    b.append("<section id=\"search\"><h2>Find a command</h2><form method=\"get\" action=\"")
        .append(esc(r.base() + "/jobs"))
        .append("\" class=\"inline\">")
        .append(hidden("driver", "commands"))
        .append("<label>by <select name=\"by\"><option value=\"id\"")
        .append(byKey ? "" : " selected")
        .append(">message id</option><option value=\"key\"")
        .append(byKey ? " selected" : "")
        .append(">idempotency key</option></select></label> <input name=\"find\" required")
        .append(" autocomplete=\"off\" aria-label=\"message id or idempotency key\" value=\"")
        .append(find == null ? "" : esc(find))
        .append("\"><button type=\"submit\">Find</button></form>");
    if (find != null) {
      UUID id;
      if (byKey) {
        Optional<PendingCommand> found;
        try {
          found = stores.commands().pending().findByKey(find);
        } catch (IllegalArgumentException e) {
          throw HttpError.badRequest("not an idempotency key: " + e.getMessage());
        }
        if (found.isEmpty()) {
          b.append("<p id=\"not-found\" class=\"note\">No pending command with idempotency key ")
              .append(esc(find))
              .append(": never enqueued, handled, cancelled, or parked as a dead letter (a dead")
              .append(" letter is found by its message id).</p></section>");
          return;
        }
        id = found.get().messageId();
      } else {
        id = uuid(find);
      }
      b.append("<p>").append(link(r, "/jobs/command?id=" + id, "Details of " + id)).append("</p>");
      detailBody(b, r, stores, id, true);
      b.append("</section>");
      return;
    }
    b.append("</section>");

    String state = r.optional("state", 10);
    if (state == null) {
      state = "queued";
    }
    if (!List.of("queued", "scheduled", "failing", "parked").contains(state)) {
      throw HttpError.badRequest("state must be queued, scheduled, failing or parked");
    }
    String type = r.optional("type", 200);
    b.append("<section id=\"work\"><h2>Work</h2><nav class=\"tabs\" id=\"states\">");
    for (String s : List.of("queued", "scheduled", "failing", "parked")) {
      b.append("<a href=\"")
          .append(
              esc(
                  r.base()
                      + "/jobs?driver=commands&state="
                      + s
                      + (type == null ? "" : "&type=" + Html.url(type))))
          .append('"')
          .append(s.equals(state) ? " class=\"active\"" : "")
          .append('>')
          .append(s)
          .append("</a> ");
    }
    b.append("</nav><form method=\"get\" action=\"")
        .append(esc(r.base() + "/jobs"))
        .append("\" class=\"inline\">")
        .append(hidden("driver", "commands"))
        .append(hidden("state", state))
        .append("<label>type <select name=\"type\"><option value=\"\">every type</option>");
    for (String t : new TreeSet<>(depth.byType().keySet())) {
      b.append("<option")
          .append(t.equals(type) ? " selected" : "")
          .append(">")
          .append(esc(t))
          .append("</option>");
    }
    b.append("</select></label> <button type=\"submit\">Show</button></form>");
    if (state.equals("parked")) {
      parked(b, r, stores, type);
    } else {
      pending(b, r, stores, depth, state, type);
    }
    b.append("</section>");
  }

  private static void pending(
      StringBuilder b, Request r, Stores stores, QueueDepth depth, String state, String type) {
    Stores.JobState js = Stores.JobState.valueOf(state.toUpperCase(Locale.ROOT));
    Stores.JobCursor after = null;
    String afterRank = r.optional("after_rank", 64);
    if (afterRank != null) {
      try {
        after =
            new Stores.JobCursor(OffsetDateTime.parse(afterRank), uuid(r.required("after_id", 36)));
      } catch (DateTimeParseException e) {
        throw HttpError.badRequest("parameter after_rank is not a time: " + afterRank);
      }
    }
    List<String> types;
    if (type != null) {
      types = List.of(type);
    } else {
      types = new ArrayList<>(new TreeSet<>(depth.byType().keySet()));
      if (types.size() > MAX_MERGED_TYPES) {
        b.append("<p class=\"note\">")
            .append(types.size())
            .append(" types: choose one to list its commands.</p>");
        return;
      }
    }
    List<Stores.Job> jobs = new ArrayList<>();
    for (String t : types) {
      // Each type's page is a range of its index; their merge is the page of every type.
      jobs.addAll(stores.jobs(t, js, after, PAGE));
    }
    // PostgreSQL's order: ranks as instants, ids as unsigned bytes (their canonical text's order;
    // UUID.compareTo compares signed halves), so the merge pages on as each type's range does.
    jobs.sort(
        Comparator.comparing((Stores.Job j) -> j.rank().toInstant())
            .thenComparing(j -> j.id().toString()));
    if (jobs.size() > PAGE) {
      jobs = jobs.subList(0, PAGE);
    }
    b.append("<p class=\"note\">")
        .append(
            switch (js) {
              case QUEUED -> "Due now, in the order pumps claim them (priority first).";
              case SCHEDULED -> "Due later: a delay, a due time, or the backoff after a failure.";
              case FAILING -> "Failed at least once and still in the queue.";
            })
        .append(" ")
        .append(PAGE)
        .append(" a page.</p><table id=\"jobs\"><thead><tr><th>message id</th><th>type</th>")
        .append("<th>priority</th><th>enqueued</th><th>next attempt</th><th>failures</th>")
        .append("<th>state</th></tr></thead><tbody>");
    for (Stores.Job j : jobs) {
      b.append("<tr id=\"job-")
          .append(j.id())
          .append("\"><td class=\"id\">")
          .append(link(r, "/jobs/command?id=" + j.id(), j.id().toString()))
          .append("</td><td>")
          .append(esc(j.type()))
          .append("</td><td class=\"num\">")
          .append(j.priority())
          .append("</td><td>")
          .append(Html.time(j.enqueuedAt()))
          .append("</td><td>")
          .append(Html.time(j.dueAt()))
          .append("</td><td class=\"num")
          .append(j.failures() > 0 ? " warn" : "")
          .append("\">")
          .append(j.failures())
          .append("</td><td>")
          .append(
              j.leasedBy() != null && j.later()
                  ? "running under a lease held by " + esc(j.leasedBy())
                  : j.later() ? "scheduled" : "due")
          .append("</td></tr>");
    }
    if (jobs.isEmpty()) {
      b.append("<tr><td colspan=\"7\" class=\"note\">None.</td></tr>");
    }
    b.append("</tbody></table>");
    if (jobs.size() == PAGE) {
      Stores.Job last = jobs.get(jobs.size() - 1);
      b.append("<p><a id=\"next-jobs\" href=\"")
          .append(
              esc(
                  r.base()
                      + "/jobs?driver=commands&state="
                      + state
                      + (type == null ? "" : "&type=" + Html.url(type))
                      + "&after_rank="
                      + Html.url(last.rank().toString())
                      + "&after_id="
                      + last.id()))
          .append("\">Next ")
          .append(PAGE)
          .append("</a></p>");
    }
  }

  private static void parked(StringBuilder b, Request r, Stores stores, String type) {
    Instant afterAt = null;
    UUID afterId = null;
    String at = r.optional("after_parked", 40);
    if (at != null) {
      try {
        afterAt = Instant.parse(at);
      } catch (DateTimeParseException e) {
        throw HttpError.badRequest("parameter after_parked is not an instant: " + at);
      }
      afterId = uuid(r.required("after_id", 36));
    }
    List<DeadLetter> letters;
    try {
      letters = stores.commands().deadLetters().list(type, afterAt, afterId, PAGE);
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(e.getMessage());
    }
    b.append("<p class=\"note\">Dead letters: the oldest parked first, ")
        .append(PAGE)
        .append(" a page.");
    if (type != null && !r.config().readOnly()) {
      b.append(" ")
          .append(
              link(
                  r,
                  "/jobs/preview?action=retry&type=" + Html.url(type),
                  "Retry all of " + type + "…"))
          .append(" · ")
          .append(
              link(
                  r,
                  "/jobs/preview?action=discard&type=" + Html.url(type),
                  "Discard all of " + type + "…"));
    }
    b.append("</p><table id=\"jobs\"><thead><tr><th>message id</th><th>type</th>")
        .append("<th>attempts</th><th>parked</th><th>last error</th></tr></thead><tbody>");
    for (DeadLetter d : letters) {
      b.append("<tr id=\"job-")
          .append(d.messageId())
          .append("\"><td class=\"id\">")
          .append(link(r, "/jobs/command?id=" + d.messageId(), d.messageId().toString()))
          .append("</td><td>")
          .append(esc(d.type()))
          .append("</td><td class=\"num\">")
          .append(d.failures())
          .append("</td><td>")
          .append(Html.time(d.parkedAt()))
          .append("</td><td class=\"reason\">")
          .append(CommandsPage.reason(d.lastError()))
          .append("</td></tr>");
    }
    if (letters.isEmpty()) {
      b.append("<tr><td colspan=\"5\" class=\"note\">None.</td></tr>");
    }
    b.append("</tbody></table>");
    if (letters.size() == PAGE) {
      DeadLetter last = letters.get(letters.size() - 1);
      b.append("<p><a id=\"next-jobs\" href=\"")
          .append(
              esc(
                  r.base()
                      + "/jobs?driver=commands&state=parked"
                      + (type == null ? "" : "&type=" + Html.url(type))
                      + "&after_parked="
                      + Html.url(last.parkedAt().toString())
                      + "&after_id="
                      + last.messageId()))
          .append("\">Next ")
          .append(PAGE)
          .append("</a></p>");
    }
  }

  /** One command's page: {@code /jobs/command?id=}. */
  static String command(Request r, Stores stores) {
    UUID id = uuid(r.required("id", 36));
    StringBuilder b = new StringBuilder();
    detailBody(b, r, stores, id, false);
    return Html.page(r, "/jobs", "Command " + id, b.toString());
  }

  /**
   * A command's detail: where it is, its attempts (failures so far, the last error of a dead
   * letter, the next attempt of a pending one) and the actions that apply to it.
   */
  private static void detailBody(
      StringBuilder b, Request r, Stores stores, UUID id, boolean inline) {
    Optional<PendingCommand> pending = stores.commands().pending().find(id);
    if (pending.isPresent()) {
      PendingCommand c = pending.get();
      String cid = c.messageId().toString();
      b.append("<table id=\"command\" data-state=\"")
          .append(c.state().name().toLowerCase(Locale.ROOT))
          .append("\"><tbody>")
          .append(row("message id", cid))
          .append(row("type", esc(c.type())))
          .append(row("correlation id", c.correlationId() == null ? "" : esc(c.correlationId())))
          .append(row("enqueued", Html.time(c.enqueuedAt())))
          .append(
              row(
                  "state",
                  switch (c.state()) {
                    case DUE -> "queued: due now";
                    case SCHEDULED -> "scheduled";
                    case LEASED ->
                        "running under a lease held by "
                            + esc(c.leaseHolder())
                            + " until "
                            + Html.time(c.leaseExpiresAt());
                  }))
          .append(row("attempts failed", String.valueOf(c.failures())))
          .append(
              row(
                  "next attempt",
                  c.state() == PendingCommand.State.LEASED
                      ? "if its lease runs out: " + Html.time(c.dueAt())
                      : Html.time(c.dueAt())))
          .append(
              row(
                  "last error",
                  "<span class=\"note\">the queue keeps a command's error when it is parked;"
                      + " the pump's log has each attempt's</span>"))
          .append("</tbody></table>");
      if (!r.config().readOnly() && c.state() != PendingCommand.State.LEASED) {
        b.append(
                form(
                    r,
                    "commands/reschedule",
                    "Reschedule command " + cid + "?",
                    hidden("id", cid)
                        + "<label>due at <input name=\"at\" required autocomplete=\"off\""
                        + " placeholder=\"2030-01-31T08:00:00Z\"></label>",
                    "Reschedule"))
            .append(
                form(
                    r,
                    "commands/cancel",
                    null,
                    hidden("id", cid)
                        + "<label>type the message id to confirm <input name=\"confirm\""
                        + " autocomplete=\"off\" required data-must-equal=\""
                        + esc(cid)
                        + "\"></label>",
                    "Cancel command"));
      }
      return;
    }
    Optional<DeadLetter> dead = stores.commands().deadLetters().find(id);
    if (dead.isPresent()) {
      DeadLetter d = dead.get();
      String cid = d.messageId().toString();
      b.append("<table id=\"command\" data-state=\"parked\"><tbody>")
          .append(row("message id", cid))
          .append(row("type", esc(d.type())))
          .append(row("priority", String.valueOf(d.priority())))
          .append(row("enqueued", Html.time(d.enqueuedAt())))
          .append(row("state", "parked: a dead letter since " + Html.time(d.parkedAt())))
          .append(row("attempts failed", String.valueOf(d.failures())))
          .append(row("next attempt", "none until it is retried"))
          .append(
              row(
                  "last error",
                  "<pre class=\"reason\">"
                      + esc(
                          d.lastError() == null
                              ? ""
                              : d.lastError().length() > 8000
                                  ? d.lastError().substring(0, 8000) + "…"
                                  : d.lastError())
                      + "</pre>"))
          .append("</tbody></table>");
      if (!r.config().readOnly()) {
        b.append(
                form(
                    r,
                    "dead-letters/retry",
                    "Retry dead letter " + cid + "?",
                    hidden("id", cid),
                    "Retry"))
            .append(
                form(
                    r,
                    "dead-letters/discard",
                    "Discard dead letter " + cid + " for good?",
                    hidden("id", cid),
                    "Discard"));
      }
      return;
    }
    if (inline) {
      b.append("<p id=\"not-found\" class=\"note\">No command with message id ")
          .append(id)
          .append(" in the queue or its dead letters: handled, cancelled or discarded.</p>");
      return;
    }
    throw HttpError.notFound(
        "no command with message id " + id + " in the queue or its dead letters");
  }

  /** What a bulk action on every dead letter of a type will touch: {@code /jobs/preview}. */
  static String preview(Request r, Stores stores) {
    String action = r.required("action", 10);
    if (!action.equals("retry") && !action.equals("discard")) {
      throw HttpError.badRequest("action must be retry or discard");
    }
    String type = r.required("type", 200);
    long count;
    List<DeadLetter> first;
    try {
      count = stores.commands().deadLetters().count(type);
      first = stores.commands().deadLetters().list(type, PREVIEW);
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(e.getMessage());
    }
    if (count == 0) {
      throw HttpError.notFound("no dead letters of type " + type);
    }
    String verb = action.equals("retry") ? "Retry" : "Discard";
    StringBuilder b = new StringBuilder();
    b.append("<section id=\"preview\" data-count=\"")
        .append(count)
        .append("\"><p>")
        .append(verb)
        .append(" <strong id=\"preview-count\">")
        .append(count)
        .append("</strong> dead letter")
        .append(count == 1 ? "" : "s")
        .append(" of type <strong>")
        .append(esc(type))
        .append("</strong>")
        .append(action.equals("discard") ? ", for good" : "")
        .append(". The oldest parked ")
        .append(Math.min(count, PREVIEW))
        .append(":</p><ul id=\"preview-ids\">");
    for (DeadLetter d : first) {
      b.append("<li class=\"id\">")
          .append(link(r, "/jobs/command?id=" + d.messageId(), d.messageId().toString()))
          .append(" <span class=\"note\">")
          .append(esc(firstLine(d.lastError())))
          .append("</span></li>");
    }
    b.append("</ul><p class=\"note\">The action moves the dead letters of this type that are")
        .append(" there when it runs, and the audit log records every one of their ids.</p>");
    if (r.config().readOnly()) {
      b.append("<p class=\"note\">This console is read-only.</p>");
    } else {
      b.append(
          form(
              r,
              "dead-letters/" + action,
              verb + " all " + count + " dead letters of type " + type + "?",
              text("type", type),
              verb + " all " + count));
    }
    b.append("</section>");
    return Html.page(r, "/jobs", verb + " every dead letter of a type", b.toString());
  }

  // ---- event handlers ---------------------------------------------------------------------------

  private static void events(StringBuilder b, Request r, Stores stores, Sampler.Snapshot snapshot) {
    String key = r.optional("key", 4 * MessageBalancer.MAX_NAME_LENGTH);
    b.append("<section id=\"search\"><h2>Find a stream</h2><form method=\"get\" action=\"")
        .append(esc(r.base() + "/jobs"))
        .append("\" class=\"inline\">")
        .append(hidden("driver", "events"))
        .append("<label>stream key <input name=\"key\" required autocomplete=\"off\" value=\"")
        .append(key == null ? "" : esc(key))
        .append("\"></label><button type=\"submit\">Find</button></form><p class=\"note\">")
        .append("Every handler's lagging, failing and parked streams, by key, are on ")
        .append(link(r, "/events", "Event handlers"))
        .append(".</p>");
    if (key != null) {
      List<String> handlers = new ArrayList<>();
      for (HandlerLag h : snapshot.handlersOrThrow()) {
        handlers.add(h.handlerKey());
      }
      List<Stores.StreamJob> rows = stores.stream(key, handlers);
      if (rows.isEmpty()) {
        b.append("<p id=\"not-found\" class=\"note\">No stream with key ")
            .append(esc(key))
            .append(".</p>");
      } else {
        Stores.StreamJob first = rows.get(0);
        b.append("<p id=\"stream\">Stream <span class=\"key\">")
            .append(esc(key))
            .append("</span> (id ")
            .append(first.streamId())
            .append("), ")
            .append(first.end())
            .append(" events.</p><table id=\"stream-handlers\"><thead><tr><th>handler</th>")
            .append("<th>checkpoint</th><th>lag</th><th>failures</th><th>next attempt</th>")
            .append("<th>parked</th><th>reason</th><th></th></tr></thead><tbody>");
        OffsetDateTime now = OffsetDateTime.now();
        for (Stores.StreamJob s : rows) {
          if (s.handlerKey() == null) {
            continue;
          }
          long offset = s.offset() == null ? 0 : s.offset();
          b.append("<tr><td>")
              .append(esc(s.handlerKey()))
              .append("</td><td class=\"num\">")
              .append(s.offset() == null ? "not read yet" : String.valueOf(offset))
              .append("</td><td class=\"num\">")
              .append(Math.max(0, s.end() - offset))
              .append("</td><td class=\"num")
              .append(s.failures() > 0 ? " warn" : "")
              .append("\">")
              .append(s.failures())
              .append("</td><td>")
              .append(
                  s.resumeAt() != null && s.resumeAt().isAfter(now)
                      ? Html.time(s.resumeAt().toInstant())
                      : "")
              .append("</td><td>")
              .append(s.parkedAt() == null ? "" : Html.time(s.parkedAt().toInstant()))
              .append("</td><td class=\"reason\">")
              .append(CommandsPage.reason(s.parkedReason()))
              .append("</td><td>");
          if (s.parkedAt() != null && !r.config().readOnly()) {
            b.append(
                form(
                    r,
                    "streams/resume",
                    "Resume stream " + key + " for " + s.handlerKey() + "?",
                    text("handler", s.handlerKey()) + hidden("stream", s.streamId()),
                    "Resume"));
          }
          b.append("</td></tr>");
        }
        b.append("</tbody></table>");
      }
    }
    b.append("</section>");
  }

  // ---- balancer groups --------------------------------------------------------------------------

  private static void balancer(
      StringBuilder b, Request r, Stores stores, Sampler.Snapshot snapshot) {
    List<GroupStats> groups = snapshot.groupsOrThrow();
    String group = r.optional("group", MessageBalancer.MAX_NAME_LENGTH);
    String key = r.optional("key", MessageBalancer.MAX_NAME_LENGTH);
    String message = r.optional("message", 20);
    b.append("<section id=\"search\"><h2>Find a key or a message</h2><form method=\"get\"")
        .append(" action=\"")
        .append(esc(r.base() + "/jobs"))
        .append("\" class=\"inline\">")
        .append(hidden("driver", "balancer"))
        .append("<label>group <select name=\"group\">");
    for (GroupStats g : groups) {
      b.append("<option")
          .append(g.group().equals(group) ? " selected" : "")
          .append(">")
          .append(esc(g.group()))
          .append("</option>");
    }
    b.append("</select></label> <label>key <input name=\"key\" autocomplete=\"off\" value=\"")
        .append(key == null ? "" : esc(key))
        .append("\"></label> <label>or message id <input name=\"message\" autocomplete=\"off\"")
        .append(" inputmode=\"numeric\" value=\"")
        .append(message == null ? "" : esc(message))
        .append("\"></label><button type=\"submit\">Find</button></form><p class=\"note\">")
        .append("Each group's parked keys and its keys with the most messages are on ")
        .append(link(r, "/balancer", "Balancer groups"))
        .append(".</p>");
    if (message != null && !message.isBlank()) {
      long id;
      try {
        id = Long.parseLong(message.strip());
      } catch (NumberFormatException e) {
        throw HttpError.badRequest("not a message id: " + message);
      }
      List<Stores.MessageJob> found = stores.messages(id, null, null, 1);
      if (found.isEmpty()) {
        b.append("<p id=\"not-found\" class=\"note\">No message ")
            .append(id)
            .append(" waiting: delivered, or never stored.</p></section>");
        return;
      }
      group = found.get(0).group();
      key = found.get(0).key();
    } else if (key == null || key.isEmpty()) {
      b.append("</section>");
      failingKeys(b, r, stores, groups, group);
      return;
    }
    if (group == null) {
      throw HttpError.badRequest("missing parameter group");
    }
    String g = group;
    if (groups.stream().noneMatch(s -> s.group().equals(g))) {
      throw HttpError.notFound("no balancer group " + group);
    }
    List<PartitionStats> stats;
    try {
      stats = stores.balancer().partitionStats(group, List.of(key));
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(e.getMessage());
    }
    if (stats.isEmpty()) {
      b.append("<p id=\"not-found\" class=\"note\">No key ")
          .append(esc(key))
          .append(" in ")
          .append(esc(group))
          .append(": it has no messages waiting.</p></section>");
      return;
    }
    PartitionStats s = stats.get(0);
    b.append("<table id=\"key\"><tbody>")
        .append(row("group", esc(group)))
        .append(row("key", "<span class=\"key\">" + esc(key) + "</span>"))
        .append(row("messages", String.valueOf(s.messageCount())))
        .append(row("head age", Html.age(s.oldestAge())))
        .append(
            row(
                "in flight",
                s.locked()
                    ? "a handler runs its head"
                    : s.leasedMessageId() != null
                        ? "message "
                            + s.leasedMessageId()
                            + " leased until "
                            + Html.time(s.leaseUntil())
                        : ""))
        .append(row("failures", String.valueOf(s.failures())))
        .append(row("next attempt", s.resumeAt() == null ? "" : Html.time(s.resumeAt())))
        .append(row("parked", s.parked() ? CommandsPage.reason(s.parkedReason()) : ""))
        .append("</tbody></table>");
    if (s.parked() && !r.config().readOnly()) {
      b.append(
          form(
              r,
              "keys/unpark",
              "Unpark key " + key + "? Its messages are delivered again.",
              text("group", group) + text("key", key),
              "Unpark"));
    }
    List<Stores.MessageJob> messages = stores.messages(null, group, key, KEY_MESSAGES);
    b.append("<h3>Its messages, head first</h3><table id=\"messages\"><thead><tr>")
        .append("<th>message id</th><th>received</th><th>bytes</th><th>attempts</th>")
        .append("</tr></thead><tbody>");
    for (Stores.MessageJob m : messages) {
      b.append("<tr id=\"message-")
          .append(m.id())
          .append("\"><td class=\"num\">")
          .append(m.id())
          .append("</td><td>")
          .append(Html.time(m.receivedAt()))
          .append("</td><td class=\"num\">")
          .append(m.bytes())
          .append("</td><td class=\"num")
          .append(m.attempts() > 0 ? " warn" : "")
          .append("\">")
          .append(m.attempts())
          .append("</td></tr>");
    }
    b.append("</tbody></table>");
    if (s.messageCount() > messages.size()) {
      b.append("<p class=\"note\">The first ")
          .append(messages.size())
          .append(" of ")
          .append(s.messageCount())
          .append(".</p>");
    }
    b.append("</section>");
  }

  /**
   * The keys of a group (the chosen one, or the only one) whose head failed: waiting out a backoff
   * (the next attempt) or parked, by key, {@value #PAGE} a page.
   */
  private static void failingKeys(
      StringBuilder b, Request r, Stores stores, List<GroupStats> groups, String group) {
    if (group == null && groups.size() == 1) {
      group = groups.get(0).group();
    }
    if (group == null) {
      return;
    }
    String g = group;
    if (groups.stream().noneMatch(s -> s.group().equals(g))) {
      throw HttpError.notFound("no balancer group " + group);
    }
    String after = r.optional("after_key", MessageBalancer.MAX_NAME_LENGTH);
    List<Stores.FailingKey> keys = stores.failingKeys(group, after, PAGE);
    b.append("<section id=\"work\"><h2>Failing keys of ")
        .append(esc(group))
        .append("</h2><p class=\"note\">Keys whose head failed: waiting for their next attempt,")
        .append(" or parked. By key, ")
        .append(PAGE)
        .append(" a page.</p><table id=\"failing-keys\"><thead><tr><th>key</th>")
        .append("<th>failures</th><th>next attempt</th><th>parked</th></tr></thead><tbody>");
    for (Stores.FailingKey k : keys) {
      b.append("<tr><td class=\"key\">")
          .append(
              link(
                  r,
                  "/jobs?driver=balancer&group=" + Html.url(group) + "&key=" + Html.url(k.key()),
                  k.key()))
          .append("</td><td class=\"num warn\">")
          .append(k.failures())
          .append("</td><td>")
          .append(k.resumeAt() == null ? "" : Html.time(k.resumeAt().toInstant()))
          .append("</td><td>")
          .append(k.parked() ? "yes" : "")
          .append("</td></tr>");
    }
    if (keys.isEmpty()) {
      b.append("<tr><td colspan=\"4\" class=\"note\">None.</td></tr>");
    }
    b.append("</tbody></table>");
    if (keys.size() == PAGE) {
      b.append("<p><a id=\"next-jobs\" href=\"")
          .append(
              esc(
                  r.base()
                      + "/jobs?driver=balancer&group="
                      + Html.url(group)
                      + "&after_key="
                      + Html.url(keys.get(keys.size() - 1).key())))
          .append("\">Next ")
          .append(PAGE)
          .append("</a></p>");
    }
    b.append("</section>");
  }

  // ---- rows, links, ids -----------------------------------------------------------------------

  private static String firstLine(String error) {
    if (error == null) {
      return "";
    }
    String first = error.lines().findFirst().orElse("");
    return first.length() > 120 ? first.substring(0, 117) + "…" : first;
  }

  private static String row(String name, String html) {
    return "<tr><th>" + esc(name) + "</th><td>" + html + "</td></tr>";
  }

  private static String link(Request r, String path, String label) {
    return "<a href=\"" + esc(r.base() + path) + "\">" + esc(label) + "</a>";
  }

  private static UUID uuid(String raw) {
    try {
      return UUID.fromString(raw.strip());
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(
          "not a message id: " + (raw.length() > 40 ? raw.substring(0, 40) : raw));
    }
  }
}
