package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;
import static org.messagepump.console.internal.Html.form;
import static org.messagepump.console.internal.Html.hidden;
import static org.messagepump.console.internal.Html.text;

import java.util.List;
import org.messagepump.eventstream.Checkpoint;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.HandlerLag;
import org.messagepump.eventstream.StreamLag;

/**
 * Lag per handler and per stream, parked streams with resume; reset and set-checkpoint behind a
 * typed confirmation (the handler key, typed again).
 */
final class EventsPage {

  /** Streams a page shows. */
  static final int PAGE = 100;

  private EventsPage() {}

  static String render(Request r, Stores stores, Sampler.Snapshot snapshot) {
    String handler = r.optional("handler", 200);
    EventOperations handlers = stores.events();
    StringBuilder b = new StringBuilder();
    b.append("<section><h2>Handlers</h2><table id=\"handlers\"><thead><tr><th>handler</th>")
        .append("<th>lagging streams</th><th>lag</th><th></th><th>parked streams</th>")
        .append("<th>failures</th></tr></thead><tbody>");
    HandlerLag chosen = null;
    for (HandlerLag h : snapshot.handlersOrThrow()) {
      String key = h.handlerKey();
      if (key.equals(handler)) {
        chosen = h;
      }
      b.append("<tr><td><a href=\"")
          .append(esc(r.base() + "/events?handler=" + Html.url(key)))
          .append("\">")
          .append(esc(key))
          .append("</a></td><td class=\"num\">")
          .append(h.laggingStreams())
          .append("</td><td class=\"num\">")
          .append(Html.live("ev." + key + ".lag", h.lag()))
          .append("</td><td>")
          .append(Html.spark("ev." + key + ".lag"))
          .append("</td><td class=\"num")
          .append(h.parkedStreams() > 0 ? " warn" : "")
          .append("\">")
          .append(h.parkedStreams())
          .append("</td><td class=\"num\">")
          .append(h.failures())
          .append("</td></tr>");
    }
    if (snapshot.handlersOrThrow().isEmpty()) {
      b.append("<tr><td colspan=\"6\" class=\"note\">No event handlers.</td></tr>");
    }
    b.append("</tbody></table></section>");

    StreamLag.Cursor after = cursor(r, handler);
    if (handler == null) {
      List<StreamLag> parked = handlers.parkedStreams(after, PAGE);
      b.append("<section><h2>Parked streams</h2><p class=\"note\">Every handler's parked streams,")
          .append(" the largest lag first, ")
          .append(PAGE)
          .append(" a page.</p>");
      streams(b, r, parked, true);
      next(b, r, null, parked);
      b.append("</section>");
    } else {
      if (chosen == null) {
        throw HttpError.notFound("no event handler " + handler);
      }
      List<StreamLag> shown = handlers.behind(handler, after, PAGE);
      b.append("<section><h2>Streams of ")
          .append(esc(handler))
          .append("</h2><p class=\"note\">")
          .append(chosen.laggingStreams())
          .append(" lagging and ")
          .append(chosen.parkedStreams())
          .append(" parked streams; the parked ones first, then the largest lag, ")
          .append(PAGE)
          .append(" a page.</p>");
      if (!r.config().readOnly() && chosen.parkedStreams() > 0) {
        b.append(
            form(
                r,
                "streams/resume",
                "Resume every parked stream of " + handler + "?",
                text("handler", handler),
                "Resume all parked"));
      }
      streams(b, r, shown, false);
      next(b, r, handler, shown);
      b.append("</section>");
      if (!r.config().readOnly()) {
        guarded(b, r, handler);
      }
    }
    return Html.page(r, "/events", "Event handlers", b.toString());
  }

  /** The page's start: after the entry named by the {@code after_*} parameters, if any. */
  private static StreamLag.Cursor cursor(Request r, String handler) {
    if (r.optional("after_stream", 20) == null) {
      return null;
    }
    long stream = r.longParam("after_stream");
    long lag = r.longParam("after_lag");
    if (lag < 0) {
      throw HttpError.badRequest("parameter after_lag must not be negative: " + lag);
    }
    boolean parked = r.intParam("after_parked", 0, 0, 1) == 1;
    String key = handler != null ? handler : r.required("after_handler", 200);
    return new StreamLag.Cursor(parked, lag, key, stream);
  }

  /** The link to the page after {@code shown}, when it was full. */
  private static void next(StringBuilder b, Request r, String handler, List<StreamLag> shown) {
    if (shown.size() < PAGE) {
      return;
    }
    StreamLag.Cursor c = shown.get(shown.size() - 1).cursor();
    String href =
        r.base()
            + "/events?"
            + (handler == null
                ? "after_handler=" + Html.url(c.handlerKey())
                : "handler=" + Html.url(handler))
            + "&after_parked="
            + (c.parked() ? 1 : 0)
            + "&after_lag="
            + c.lag()
            + "&after_stream="
            + c.streamId();
    b.append("<p><a id=\"next-streams\" href=\"")
        .append(esc(href))
        .append("\">Next ")
        .append(PAGE)
        .append(" streams</a></p>");
  }

  private static void streams(StringBuilder b, Request r, List<StreamLag> list, boolean key) {
    b.append("<table class=\"streams\"><thead><tr>")
        .append(key ? "<th>handler</th>" : "")
        .append("<th>stream</th><th>id</th><th>checkpoint</th><th>end</th><th>lag</th>")
        .append("<th>failures</th><th>resume at</th><th>parked</th><th></th></tr></thead><tbody>");
    for (StreamLag s : list) {
      Checkpoint c = s.checkpoint();
      b.append("<tr id=\"stream-")
          .append(c.streamId())
          .append("\">")
          .append(key ? "<td>" + esc(c.handlerKey()) + "</td>" : "")
          .append("<td class=\"key\">")
          .append(s.streamKey() == null ? "<span class=\"note\">no key</span>" : esc(s.streamKey()))
          .append("</td><td class=\"num\">")
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
        String name = s.streamKey() == null ? "stream " + c.streamId() : "stream " + s.streamKey();
        b.append(
            form(
                r,
                "streams/resume",
                "Resume " + name + " for " + c.handlerKey() + "?",
                text("handler", c.handlerKey()) + hidden("stream", c.streamId()),
                "Resume"));
      }
      b.append("</td></tr>");
    }
    if (list.isEmpty()) {
      b.append("<tr><td colspan=\"10\" class=\"note\">None.</td></tr>");
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
