package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;

import java.util.List;
import org.messagepump.core.DatabaseException;

/** The audit trail, newest first, a page at a time (keyset: entries older than {@code before}). */
final class AuditPage {

  static final int PAGE = 100;

  /** Targets shown before the rest fold away. */
  static final int SHOWN_TARGETS = 5;

  private AuditPage() {}

  static String render(Request r, Audit audit, Refusals refusals) {
    String before = r.optional("before", 19);
    Long from = null;
    if (before != null) {
      from = r.longParam("before");
    }
    StringBuilder b = new StringBuilder();
    b.append("<p class=\"note\">Every action an operator ran, refused or failed, from the table ")
        .append("<code>")
        .append(esc(audit.tableName()))
        .append("</code> (written in the action's own transaction), and at INFO on the logger ")
        .append("<code>")
        .append(Audit.LOGGER)
        .append("</code>. Requests refused before anyone was identified are not here: ")
        .append("<span id=\"refused\">")
        .append(refusals.total())
        .append("</span> since this console started, logged at most once a minute as")
        .append(" <code>anonymous</code>.</p>");
    List<Audit.Entry> entries;
    try {
      entries = audit.page(from, PAGE + 1);
    } catch (DatabaseException e) {
      b.append("<p class=\"warn\" id=\"no-audit\">The audit table cannot be read (")
          .append(esc(e.getMessage()))
          .append("): actions are refused until it exists.</p>");
      return Html.page(r, "/audit", "Audit log", b.toString());
    }
    b.append("<table id=\"audit\"><thead><tr><th>time</th><th>who</th><th>from</th>")
        .append("<th>action</th><th>targets</th><th>result</th></tr></thead><tbody>");
    for (Audit.Entry e : entries.subList(0, Math.min(PAGE, entries.size()))) {
      b.append("<tr id=\"audit-")
          .append(e.id())
          .append("\"><td>")
          .append(Html.time(e.at()))
          .append("</td><td>")
          .append(esc(e.actor()))
          .append("</td><td>")
          .append(esc(e.from()))
          .append("</td><td>")
          .append(esc(e.action()))
          .append("</td><td class=\"targets\">")
          .append(targets(e.targets()))
          .append("</td><td class=\"reason\">")
          .append(esc(e.result()))
          .append("</td></tr>");
    }
    if (entries.isEmpty()) {
      b.append("<tr><td colspan=\"6\" class=\"note\">No actions yet.</td></tr>");
    }
    b.append("</tbody></table>");
    if (entries.size() > PAGE) {
      b.append("<p><a id=\"older\" href=\"")
          .append(esc(r.base() + "/audit?before=" + entries.get(PAGE - 1).id()))
          .append("\">Older entries</a></p>");
    }
    return Html.page(r, "/audit", "Audit log", b.toString());
  }

  private static String targets(List<String> targets) {
    StringBuilder b = new StringBuilder();
    int shown = Math.min(SHOWN_TARGETS, targets.size());
    for (int i = 0; i < shown; i++) {
      b.append("<div>").append(esc(targets.get(i))).append("</div>");
    }
    if (targets.size() > shown) {
      b.append("<details><summary>").append(targets.size() - shown).append(" more</summary>");
      for (String t : targets.subList(shown, targets.size())) {
        b.append("<div>").append(esc(t)).append("</div>");
      }
      b.append("</details>");
    }
    return b.toString();
  }
}
