package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;
import static org.messagepump.console.internal.Html.form;
import static org.messagepump.console.internal.Html.hidden;
import static org.messagepump.console.internal.Html.text;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.messagepump.commands.DeadLetter;
import org.messagepump.commands.DeadLetters;
import org.messagepump.commands.HandledCommand;
import org.messagepump.commands.LeasedCommand;
import org.messagepump.commands.PendingCommand;
import org.messagepump.commands.QueueDepth;

/** Depth by type and the dead letters, with retry and discard one at a time and in bulk. */
final class CommandsPage {

  static final int PREVIEW_BYTES = 400;

  private CommandsPage() {}

  static String render(Request r, Stores stores, Sampler.Snapshot snapshot, List<UUID> retried) {
    String type = r.optional("type", 200);
    int limit = r.intParam("limit", 50, 1, 1000);
    Instant afterAt = null;
    UUID afterId = null;
    if (r.optional("after_id", 36) != null) {
      String at = r.required("after_parked", 40);
      try {
        afterId = UUID.fromString(r.required("after_id", 36));
        afterAt = Instant.parse(at);
      } catch (IllegalArgumentException | java.time.format.DateTimeParseException e) {
        throw HttpError.badRequest("parameters after_id and after_parked name no dead letter");
      }
    }
    StringBuilder b = new StringBuilder();
    QueueDepth depth = snapshot.depthOrThrow();
    b.append("<section><h2>Depth by type</h2><table id=\"depth\"><thead><tr><th>type</th>")
        .append("<th>due</th><th>delayed</th><th>running under a lease</th><th>dead letters</th>")
        .append("<th></th></tr></thead><tbody>");
    Map<String, QueueDepth.TypeDepth> byType = new TreeMap<>(depth.byType());
    byType.forEach(
        (t, d) -> {
          b.append("<tr><td><a href=\"")
              .append(esc(r.base() + "/commands?type=" + Html.url(t)))
              .append("\">")
              .append(esc(t))
              .append("</a></td><td class=\"num\">")
              .append(d.due())
              .append("</td><td class=\"num\">")
              .append(d.delayed())
              .append("</td><td class=\"num\">")
              .append(d.leased())
              .append("</td><td class=\"num")
              .append(d.deadLetters() > 0 ? " warn" : "")
              .append("\">")
              .append(d.deadLetters())
              .append("</td><td>");
          if (!r.config().readOnly() && d.deadLetters() > 0) {
            // A bulk action on a type shows what it will touch (count, first ids) before it runs.
            b.append("<a class=\"button\" href=\"")
                .append(esc(r.base() + "/jobs/preview?action=retry&type=" + Html.url(t)))
                .append("\">Retry all…</a> <a class=\"button\" href=\"")
                .append(esc(r.base() + "/jobs/preview?action=discard&type=" + Html.url(t)))
                .append("\">Discard all…</a>");
          }
          b.append("</td></tr>");
        });
    if (byType.isEmpty()) {
      b.append("<tr><td colspan=\"6\" class=\"note\">No commands.</td></tr>");
    }
    b.append("</tbody></table><p class=\"note\">A command running under a lease (lease mode) is")
        .append(" counted there only: its handler runs, and its due time is its lease's expiry.")
        .append("</p></section>");

    lookup(b, r, stores);
    leased(b, r, stores, type, depth);
    retried(b, r, stores, retried);

    DeadLetters letters = stores.commands().deadLetters();
    List<DeadLetter> list = letters.list(type, afterAt, afterId, limit);
    long total =
        type == null
            ? depth.deadLetters()
            : depth.byType().containsKey(type) ? depth.byType().get(type).deadLetters() : 0;
    b.append("<section><h2>Dead letters")
        .append(type == null ? "" : " of type " + esc(type))
        .append("</h2><p class=\"note\">")
        .append(list.size())
        .append(" shown of ")
        .append(total)
        .append(afterId == null ? ", oldest parked first" : ", a later page")
        .append(
            type == null ? "" : " · <a href=\"" + esc(r.base() + "/commands") + "\">all types</a>")
        .append("</p>");
    boolean actions = !r.config().readOnly() && !list.isEmpty();
    if (actions) {
      b.append("<form id=\"bulk\" method=\"post\" action=\"")
          .append(esc(r.base() + "/actions/dead-letters/retry"))
          .append("\" data-confirm=\"Retry the selected dead letters?\">")
          .append(hidden("csrf", r.csrf()))
          .append("<button type=\"submit\" id=\"bulk-retry\">Retry selected</button> ")
          .append("<button type=\"submit\" id=\"bulk-discard\" formaction=\"")
          .append(esc(r.base() + "/actions/dead-letters/discard"))
          .append("\" data-confirm=\"Discard the selected dead letters for good?\">")
          .append("Discard selected</button></form>");
    }
    b.append("<table id=\"dead-letters\"><thead><tr><th></th><th>message id</th><th>type</th>")
        .append("<th>priority</th><th>attempts</th><th>enqueued</th><th>parked</th><th>reason</th>")
        .append("<th>payload</th><th></th></tr></thead><tbody>");
    for (DeadLetter d : list) {
      b.append("<tr id=\"dl-").append(d.messageId()).append("\"><td>");
      if (actions) {
        b.append("<input type=\"checkbox\" form=\"bulk\" name=\"id\" value=\"")
            .append(d.messageId())
            .append("\" aria-label=\"select\">");
      }
      b.append("</td><td class=\"id\">")
          .append(d.messageId())
          .append("</td><td>")
          .append(esc(d.type()))
          .append("</td><td class=\"num priority\">")
          .append(d.priority())
          .append("</td><td class=\"num\">")
          .append(d.failures())
          .append("</td><td>")
          .append(Html.time(d.enqueuedAt()))
          .append("</td><td>")
          .append(Html.time(d.parkedAt()))
          .append("</td><td class=\"reason\">")
          .append(reason(d.lastError()))
          .append("</td><td>")
          .append(payload(r, d))
          .append("</td><td class=\"actions\">");
      if (!r.config().readOnly()) {
        b.append(
                form(
                    r,
                    "dead-letters/retry",
                    "Retry dead letter " + d.messageId() + "?",
                    hidden("id", d.messageId()),
                    "Retry"))
            .append(
                form(
                    r,
                    "dead-letters/discard",
                    "Discard dead letter " + d.messageId() + " for good?",
                    hidden("id", d.messageId()),
                    "Discard"));
      }
      b.append("</td></tr>");
    }
    if (list.isEmpty()) {
      b.append("<tr><td colspan=\"9\" class=\"note\">No dead letters.</td></tr>");
    }
    b.append("</tbody></table>");
    if (list.size() == limit) {
      DeadLetter last = list.get(list.size() - 1);
      b.append("<p><a id=\"next-dead-letters\" href=\"")
          .append(
              esc(
                  r.base()
                      + "/commands?"
                      + (type == null ? "" : "type=" + Html.url(type) + "&")
                      + "limit="
                      + limit
                      + "&after_parked="
                      + Html.url(last.parkedAt().toString())
                      + "&after_id="
                      + last.messageId()))
          .append("\">Next ")
          .append(limit)
          .append(" dead letters</a></p>");
    }
    b.append("</section>");
    history(b, r, stores);
    return Html.page(r, "/commands", "Commands", b.toString());
  }

  /** Longest text the look-up takes (an idempotency key is at most 1,000 characters). */
  static final int MAX_FIND = 1000;

  /**
   * Finding one pending command by message id or idempotency key ({@code ?by=id|key&find=…}): its
   * state, and (unless read-only) cancel, confirmed by its message id typed again, and reschedule.
   */
  private static void lookup(StringBuilder b, Request r, Stores stores) {
    String find = r.optional("find", MAX_FIND);
    boolean byKey = !"id".equals(r.optional("by", 3));
    b.append("<section id=\"find-command\"><h2>Find a command</h2><form method=\"get\" action=\"")
        .append(esc(r.base() + "/commands"))
        .append("\" class=\"inline\"><label>by <select name=\"by\"><option value=\"key\"")
        .append(byKey ? " selected" : "")
        .append(">idempotency key</option><option value=\"id\"")
        .append(byKey ? "" : " selected")
        .append(">message id</option></select></label> <input name=\"find\" required")
        .append(" autocomplete=\"off\" aria-label=\"message id or idempotency key\" value=\"")
        .append(find == null ? "" : esc(find))
        .append("\"><button type=\"submit\">Find</button></form>");
    if (find == null) {
      b.append("</section>");
      return;
    }
    java.util.Optional<PendingCommand> found;
    UUID id = null;
    try {
      if (byKey) {
        found = stores.commands().pending().findByKey(find);
      } else {
        id = UUID.fromString(find.strip());
        found = stores.commands().pending().find(id);
      }
    } catch (IllegalArgumentException e) {
      throw HttpError.badRequest(
          byKey ? "not an idempotency key: " + e.getMessage() : "not a message id");
    }
    if (found.isEmpty()) {
      b.append("<p id=\"not-found\" class=\"note\">No pending command with ")
          .append(byKey ? "idempotency key " : "message id ")
          .append(esc(find))
          .append(": never enqueued, handled, cancelled")
          .append(
              id != null && stores.commands().deadLetters().find(id).isPresent()
                  ? ", or parked: it is a dead letter (below)."
                  : ", or parked as a dead letter.")
          .append("</p></section>");
      return;
    }
    PendingCommand c = found.get();
    String state =
        switch (c.state()) {
          case DUE -> "due";
          case SCHEDULED -> "scheduled";
          case LEASED ->
              "running under a lease held by "
                  + esc(c.leaseHolder())
                  + " until "
                  + Html.time(c.leaseExpiresAt());
        };
    b.append("<table id=\"found\" data-state=\"")
        .append(c.state().name().toLowerCase(java.util.Locale.ROOT))
        .append("\"><tbody><tr><th>message id</th><td class=\"id\">")
        .append(c.messageId())
        .append("</td></tr><tr><th>type</th><td>")
        .append(esc(c.type()))
        .append("</td></tr>");
    if (c.idempotencyKey() != null) {
      b.append("<tr><th>idempotency key</th><td class=\"holder\">")
          .append(esc(c.idempotencyKey()))
          .append("</td></tr>");
    }
    b.append("<tr><th>correlation id</th><td>")
        .append(c.correlationId() == null ? "" : esc(c.correlationId()))
        .append("</td></tr><tr><th>enqueued</th><td>")
        .append(Html.time(c.enqueuedAt()))
        .append("</td></tr><tr><th>due</th><td>")
        .append(Html.time(c.dueAt()))
        .append("</td></tr><tr><th>failures</th><td class=\"num\">")
        .append(c.failures())
        .append("</td></tr><tr><th>state</th><td>")
        .append(state)
        .append("</td></tr></tbody></table>");
    if (c.state() == PendingCommand.State.LEASED) {
      b.append("<p class=\"note\">Its handler runs: it can be cancelled or rescheduled only once")
          .append(" it is due again.</p>");
    } else if (!r.config().readOnly()) {
      String cid = c.messageId().toString();
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
                  "Cancel command"))
          .append("<p class=\"note\">Cancel deletes it: it is never handled, and its")
          .append(" idempotency key is kept (an enqueue with it is still a duplicate). A command a")
          .append(" pump is handling right now is refused and stays as it is.</p>");
    }
    b.append("</section>");
  }

  /** Rows per page of the recent history. */
  static final int HISTORY_SHOWN = 20;

  /**
   * The newest handled commands of the queue's history, newest first, {@value #HISTORY_SHOWN} a
   * page; read-only. A later page starts before the cursor {@code history_at}, {@code history_id}
   * (the last row shown), read on the history's index.
   */
  private static void history(StringBuilder b, Request r, Stores stores) {
    HandledCommand before = null;
    if (r.optional("history_id", 20) != null) {
      try {
        long id = Long.parseLong(r.required("history_id", 20));
        Instant at = Instant.parse(r.required("history_at", 40));
        before = new HandledCommand(id, null, null, null, 1, java.time.Duration.ZERO, at);
      } catch (IllegalArgumentException | java.time.format.DateTimeParseException e) {
        throw HttpError.badRequest("parameters history_id and history_at name no history row");
      }
    }
    List<HandledCommand> list = stores.commands().history(before, HISTORY_SHOWN);
    b.append("<section><h2>Recent history</h2><p class=\"note\">")
        .append(list.size())
        .append(before == null ? " newest" : " earlier")
        .append(" handled commands, newest first. The queue records them when built with")
        .append(" <code>history(true)</code>; the retention job deletes old ones.</p>")
        .append("<table id=\"history\"><thead><tr><th>handled</th><th>message id</th>")
        .append("<th>type</th><th>idempotency key</th><th>attempts</th><th>handling</th>")
        .append("</tr></thead><tbody>");
    for (HandledCommand h : list) {
      b.append("<tr id=\"history-")
          .append(h.historyId())
          .append("\"><td>")
          .append(Html.time(h.handledAt()))
          .append("</td><td class=\"id\">")
          .append(h.messageId())
          .append("</td><td>")
          .append(esc(h.type()))
          .append("</td><td>")
          .append(h.idempotencyKey() == null ? "" : esc(h.idempotencyKey()))
          .append("</td><td class=\"num\">")
          .append(h.attempts())
          .append("</td><td class=\"num\">")
          .append(String.format(java.util.Locale.ROOT, "%.1f ms", h.handling().toNanos() / 1e6))
          .append("</td></tr>");
    }
    if (list.isEmpty()) {
      b.append("<tr><td colspan=\"6\" class=\"note\">No history.</td></tr>");
    }
    b.append("</tbody></table>");
    if (list.size() == HISTORY_SHOWN) {
      HandledCommand last = list.get(list.size() - 1);
      b.append("<p><a id=\"next-history\" href=\"")
          .append(
              esc(
                  r.base()
                      + "/commands?history_at="
                      + Html.url(last.handledAt().toString())
                      + "&history_id="
                      + last.historyId()))
          .append("\">Earlier history</a></p>");
    }
    b.append("</section>");
  }

  /** The most leased commands listed; the depth table counts them all. */
  static final int LEASED_SHOWN = 50;

  /**
   * The commands running under a lease (of {@code type} when one is chosen): holder, lease expiry
   * and attempt, the lease that runs out first first. Omitted while none is leased: when the depth
   * (the console's last sample) counts none, or when the list, read now, finds none.
   */
  private static void leased(
      StringBuilder b, Request r, Stores stores, String type, QueueDepth depth) {
    long total = type == null ? depth.leased() : depth.of(type).leased();
    if (total == 0) {
      return;
    }
    List<LeasedCommand> list = stores.commands().leasedCommands(type, LEASED_SHOWN);
    if (list.isEmpty()) {
      return; // they completed since the sample
    }
    total = Math.max(total, list.size());
    b.append("<section><h2>Running under a lease")
        .append(type == null ? "" : " of type " + esc(type))
        .append("</h2><p class=\"note\">")
        .append(list.size())
        .append(" shown of ")
        .append(total)
        .append(", the lease that runs out first first. A lease is extended while its holder's")
        .append(" handler runs; one that runs out makes the command due again, the attempt")
        .append(" counted as failed.</p><table id=\"leased\"><thead><tr><th>message id</th>")
        .append(
            "<th>type</th><th>priority</th><th>holder</th><th>lease expires</th><th>attempt</th>")
        .append("</tr></thead><tbody>");
    for (LeasedCommand l : list) {
      b.append("<tr id=\"leased-")
          .append(l.messageId())
          .append("\"><td class=\"id\">")
          .append(l.messageId())
          .append("</td><td>")
          .append(esc(l.type()))
          .append("</td><td class=\"num priority\">")
          .append(l.priority())
          .append("</td><td class=\"holder\">")
          .append(esc(l.holder()))
          .append("</td><td>")
          .append(Html.time(l.leaseExpiresAt()))
          .append("</td><td class=\"num\">")
          .append(l.attempt())
          .append("</td></tr>");
    }
    b.append("</tbody></table></section>");
  }

  private static void retried(StringBuilder b, Request r, Stores stores, List<UUID> retried) {
    if (retried.isEmpty()) {
      return;
    }
    b.append("<section><h2>Recently retried</h2><table id=\"retried\"><thead><tr>")
        .append("<th>message id</th><th>now</th></tr></thead><tbody>");
    for (UUID id : retried) {
      Stores.CommandStatus status = stores.commandState(id);
      Stores.CommandState state = status.state();
      String text =
          switch (state) {
            case WAITING -> "waiting in the queue";
            case LEASED ->
                "running under a lease held by "
                    + esc(status.holder())
                    + " until "
                    + Html.time(status.leaseExpiresAt());
            case DEAD_LETTER -> "a dead letter again";
            case DONE -> "handled";
          };
      b.append("<tr id=\"retried-")
          .append(id)
          .append("\" data-state=\"")
          .append(state.name().toLowerCase(java.util.Locale.ROOT))
          .append("\"><td class=\"id\">")
          .append(id)
          .append("</td><td>")
          .append(text)
          .append("</td></tr>");
    }
    b.append("</tbody></table><p class=\"note\">A handled command leaves the queue;")
        .append(" this page refreshes itself while one is waiting.</p></section>");
  }

  static String reason(String error) {
    if (error == null) {
      return "";
    }
    String first = error.lines().findFirst().orElse("");
    if (first.length() > 120) {
      first = first.substring(0, 117) + "…";
    }
    if (first.equals(error)) {
      return esc(first);
    }
    return "<details><summary>"
        + esc(first)
        + "</summary><pre>"
        + esc(error.length() > 8000 ? error.substring(0, 8000) + "…" : error)
        + "</pre></details>";
  }

  private static String payload(Request r, DeadLetter d) {
    if (!r.config().showPayloads()) {
      return "<span class=\"note\">hidden</span>";
    }
    byte[] p = d.envelope().payload();
    String text = new String(p, 0, Math.min(p.length, PREVIEW_BYTES), StandardCharsets.UTF_8);
    return "<details><summary>"
        + p.length
        + " bytes</summary><pre class=\"payload\">"
        + esc(text)
        + (p.length > PREVIEW_BYTES ? "…" : "")
        + "</pre></details>";
  }
}
