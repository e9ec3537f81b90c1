package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;

/** The latest audited actions of this console (the full log goes to SLF4J). */
final class AuditPage {

  private AuditPage() {}

  static String render(Request r, Audit audit) {
    StringBuilder b = new StringBuilder();
    b.append("<p class=\"note\">Every action, allowed or refused, is logged at INFO to the")
        .append(" logger <code>org.messagepump.console.audit</code>; the latest ")
        .append(Audit.KEPT)
        .append(" of this process are shown here.</p><table id=\"audit\"><thead><tr>")
        .append("<th>time</th><th>who</th><th>from</th><th>action</th><th>target</th>")
        .append("<th>result</th></tr></thead><tbody>");
    for (Audit.Entry e : audit.recent()) {
      b.append("<tr><td>")
          .append(Html.time(e.at()))
          .append("</td><td>")
          .append(esc(e.actor()))
          .append("</td><td>")
          .append(esc(e.from()))
          .append("</td><td>")
          .append(esc(e.action()))
          .append("</td><td>")
          .append(esc(e.target()))
          .append("</td><td>")
          .append(esc(e.result()))
          .append("</td></tr>");
    }
    if (audit.recent().isEmpty()) {
      b.append("<tr><td colspan=\"6\" class=\"note\">No actions yet.</td></tr>");
    }
    b.append("</tbody></table>");
    return Html.page(r, "/audit", "Audit log", b.toString());
  }
}
