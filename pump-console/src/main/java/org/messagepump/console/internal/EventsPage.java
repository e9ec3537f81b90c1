package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;
import static org.messagepump.console.internal.Html.form;
import static org.messagepump.console.internal.Html.hidden;
import static org.messagepump.console.internal.Html.text;

import java.util.List;
import org.messagepump.eventstream.Checkpoint;
import org.messagepump.eventstream.EventHandlers;

/**
 * Lag per handler and per stream, parked streams with resume; reset and set-checkpoint behind a
 * typed confirmation (the handler key, typed again).
 */
final class EventsPage {

  static final int MAX_STREAMS = 200;

  private EventsPage() {}

  static String render(Request r, Stores stores) {
    String handler = r.optional("handler", 200);
    EventHandlers handlers = stores.handlers();
    StringBuilder b = new StringBuilder();
    b.append("<section><h2>Handlers</h2><table id=\"handlers\"><thead><tr><th>handler</th>")
        .append("<th>streams</th><th>lag</th><th></th><th>parked streams</th><th>failures</th>")
        .append("</tr></thead><tbody>");
    List<String> keys = handlers.handlerKeys();
    for (String key : keys) {
      List<Checkpoint> cps = handlers.checkpoints(key);
      long lag = cps.stream().mapToLong(Checkpoint::lag).sum();
      long parked = cps.stream().filter(Checkpoint::parked).count();
      long failures = cps.stream().mapToLong(Checkpoint::failures).sum();
      b.append("<tr><td><a href=\"")
          .append(esc(r.base() + "/events?handler=" + Html.url(key)))
          .append("\">")
          .append(esc(key))
          .append("</a></td><td class=\"num\">")
          .append(cps.size())
          .append("</td><td class=\"num\">")
          .append(Html.live("ev." + key + ".lag", lag))
          .append("</td><td>")
          .append(Html.spark("ev." + key + ".lag"))
          .append("</td><td class=\"num")
          .append(parked > 0 ? " warn" : "")
          .append("\">")
          .append(parked)
          .append("</td><td class=\"num\">")
          .append(failures)
          .append("</td></tr>");
    }
    if (keys.isEmpty()) {
      b.append("<tr><td colspan=\"6\" class=\"note\">No event handlers.</td></tr>");
    }
    b.append("</tbody></table></section>");

    if (handler == null) {
      List<Checkpoint> parked = handlers.parked();
      b.append("<section><h2>Parked streams</h2>");
      streams(b, r, parked, true);
      b.append("</section>");
    } else {
      if (!keys.contains(handler)) {
        throw HttpError.notFound("no event handler " + handler);
      }
      List<Checkpoint> all = handlers.checkpoints(handler);
      List<Checkpoint> shown =
          all.stream()
              .filter(c -> c.lag() > 0 || c.parked() || c.failures() > 0)
              .limit(MAX_STREAMS)
              .toList();
      b.append("<section><h2>Streams of ")
          .append(esc(handler))
          .append("</h2><p class=\"note\">")
          .append(shown.size())
          .append(" lagging, failing or parked of ")
          .append(all.size())
          .append(" streams (at most ")
          .append(MAX_STREAMS)
          .append(" shown).</p>");
      if (!r.config().readOnly() && all.stream().anyMatch(Checkpoint::parked)) {
        b.append(
            form(
                r,
                "streams/resume",
                "Resume every parked stream of " + handler + "?",
                text("handler", handler),
                "Resume all parked"));
      }
      streams(b, r, shown, false);
      b.append("</section>");
      if (!r.config().readOnly()) {
        guarded(b, r, handler);
      }
    }
    return Html.page(r, "/events", "Event handlers", b.toString());
  }

  private static void streams(StringBuilder b, Request r, List<Checkpoint> list, boolean key) {
    b.append("<table class=\"streams\"><thead><tr>")
        .append(key ? "<th>handler</th>" : "")
        .append("<th>stream</th><th>checkpoint</th><th>end</th><th>lag</th><th>failures</th>")
        .append("<th>resume at</th><th>parked</th><th></th></tr></thead><tbody>");
    for (Checkpoint c : list) {
      b.append("<tr id=\"stream-")
          .append(c.streamId())
          .append("\">")
          .append(key ? "<td>" + esc(c.handlerKey()) + "</td>" : "")
          .append("<td class=\"num\">")
          .append(c.streamId())
          .append("</td><td class=\"num\">")
          .append(c.offset())
          .append("</td><td class=\"num\">")
          .append(c.streamNextOffset())
          .append("</td><td class=\"num\">")
          .append(c.lag())
          .append("</td><td class=\"num\">")
          .append(c.failures())
          .append("</td><td>")
          .append(Html.time(c.resumeAt()))
          .append("</td><td class=\"reason\">")
          .append(
              c.parked()
                  ? Html.time(c.parkedAt()) + ": " + CommandsPage.reason(c.parkedReason())
                  : "")
          .append("</td><td>");
      if (c.parked() && !r.config().readOnly()) {
        b.append(
            form(
                r,
                "streams/resume",
                "Resume stream " + c.streamId() + " for " + c.handlerKey() + "?",
                text("handler", c.handlerKey()) + hidden("stream", c.streamId()),
                "Resume"));
      }
      b.append("</td></tr>");
    }
    if (list.isEmpty()) {
      b.append("<tr><td colspan=\"9\" class=\"note\">None.</td></tr>");
    }
    b.append("</tbody></table>");
  }

  private static void guarded(StringBuilder b, Request r, String handler) {
    String confirm =
        "<label>type the handler key to confirm <input name=\"confirm\" autocomplete=\"off\""
            + " required data-must-equal=\""
            + esc(handler)
            + "\"></label>";
    b.append("<section class=\"danger\"><h2>Move checkpoints</h2>")
        .append("<p>Reset replays the handler from offset 0 on every stream.</p>")
        .append(form(r, "checkpoints/reset", null, text("handler", handler) + confirm, "Reset"))
        .append(
            "<p>Set moves one stream's checkpoint, only if it is still at the expected offset.</p>")
        .append(
            form(
                r,
                "checkpoints/set",
                null,
                text("handler", handler)
                    + "<label>stream <input name=\"stream\" inputmode=\"numeric\" required></label>"
                    + "<label>expected <input name=\"expected\" inputmode=\"numeric\" required></label>"
                    + "<label>new offset <input name=\"offset\" inputmode=\"numeric\" required></label>"
                    + confirm,
                "Set checkpoint"))
        .append("</section>");
  }
}
