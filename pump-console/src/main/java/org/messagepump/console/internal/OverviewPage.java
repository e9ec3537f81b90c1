package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;
import static org.messagepump.console.internal.Html.live;
import static org.messagepump.console.internal.Html.spark;

import java.util.Map;
import java.util.TreeMap;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.commands.QueueDepth;
import org.messagepump.eventstream.HandlerLag;

/** Per driver and pump: what waits, what lags, what is parked, handled per second; live charts. */
final class OverviewPage {

  private OverviewPage() {}

  static String render(Request r, Sampler.Snapshot snapshot) {
    StringBuilder b = new StringBuilder();
    QueueDepth depth = snapshot.depthOrThrow();
    b.append("<section><h2>Commands</h2><div class=\"cards\">");
    card(b, "due", "cmd.due", depth.due());
    card(b, "delayed", "cmd.delayed", depth.delayed());
    card(b, "running under a lease", "cmd.leased", depth.leased());
    card(b, "dead letters", "cmd.dead", depth.deadLetters());
    b.append("</div></section>");

    b.append("<section><h2>Event handlers</h2><table><thead><tr><th>handler</th><th>lag</th>")
        .append(
            "<th></th><th>events/s</th><th></th><th>lagging streams</th><th>parked streams</th>")
        .append("<th>failures</th>")
        .append("</tr></thead><tbody>");
    for (HandlerLag h : snapshot.handlersOrThrow()) {
      String key = h.handlerKey();
      long lag = h.lag();
      long parked = h.parkedStreams();
      long failures = h.failures();
      String s = "ev." + key;
      b.append("<tr><td><a href=\"")
          .append(esc(r.base() + "/events?handler=" + Html.url(key)))
          .append("\">")
          .append(esc(key))
          .append("</a></td><td class=\"num\">")
          .append(live(s + ".lag", lag))
          .append("</td><td>")
          .append(spark(s + ".lag"))
          .append("</td><td class=\"num\">")
          .append(live(s + ".rate", "…"))
          .append("</td><td>")
          .append(spark(s + ".rate"))
          .append("</td><td class=\"num\">")
          .append(h.laggingStreams())
          .append("</td><td class=\"num")
          .append(parked > 0 ? " warn" : "")
          .append("\">")
          .append(live(s + ".parked", parked))
          .append("</td><td class=\"num\">")
          .append(failures)
          .append("</td></tr>");
    }
    b.append("</tbody></table></section>");

    b.append("<section><h2>Balancer groups</h2><table><thead><tr><th>group</th>")
        .append("<th>partitions</th><th>messages</th><th></th><th>in flight (leases)</th>")
        .append("<th>parked keys</th><th>oldest</th></tr></thead><tbody>");
    for (GroupStats g : snapshot.groupsOrThrow()) {
      String s = "bal." + g.group();
      b.append("<tr><td><a href=\"")
          .append(esc(r.base() + "/balancer?group=" + Html.url(g.group())))
          .append("\">")
          .append(esc(g.group()))
          .append("</a></td><td class=\"num\">")
          .append(g.partitions())
          .append("</td><td class=\"num\">")
          .append(live(s + ".messages", g.messages()))
          .append("</td><td>")
          .append(spark(s + ".messages"))
          .append("</td><td class=\"num\">")
          .append(live(s + ".leases", g.leases()))
          .append("</td><td class=\"num")
          .append(g.parked() > 0 ? " warn" : "")
          .append("\">")
          .append(live(s + ".parked", g.parked()))
          .append("</td><td class=\"num\">")
          .append(Html.age(g.oldestAge()))
          .append("</td></tr>");
    }
    b.append("</tbody></table></section>");
    pumps(b, r.config().meters());
    return Html.page(r, "", "Overview", b.toString());
  }

  private static void card(StringBuilder b, String label, String series, long value) {
    b.append("<div class=\"card\"><div class=\"label\">")
        .append(esc(label))
        .append("</div><div class=\"value\">")
        .append(live(series, value))
        .append("</div>")
        .append(spark(series))
        .append("</div>");
  }

  private static void pumps(StringBuilder b, MeterReadings meters) {
    b.append("<section><h2>Pumps</h2>");
    if (meters == null) {
      b.append("<p class=\"note\">Handled per second, failures and parks per pump come from the")
          .append(" application's MeterRegistry: mount the console in the application (or run")
          .append(" <code>pump console --demo</code>). Here the database's figures are shown,")
          .append(" and events/s per handler.</p></section>");
      return;
    }
    Map<String, Map<String, Double>> byPump = new TreeMap<>();
    for (MeterReadings.Deliveries c : meters.deliveries()) {
      byPump.computeIfAbsent(c.pump(), p -> new TreeMap<>()).put(c.outcome(), c.count());
    }
    b.append("<table><thead><tr><th>pump</th><th>handled/s</th><th></th><th>failed/s</th>")
        .append("<th>busy/s</th><th>in flight</th><th>handled</th><th>failed</th>")
        .append("<th>parked</th></tr></thead><tbody>");
    byPump.forEach(
        (pump, totals) -> {
          String s = "pump." + pump;
          b.append("<tr><td>")
              .append(esc(pump))
              .append("</td><td class=\"num\">")
              .append(live(s + ".handled", "…"))
              .append("</td><td>")
              .append(spark(s + ".handled"))
              .append("</td><td class=\"num\">")
              .append(live(s + ".failed", "…"))
              .append("</td><td class=\"num\">")
              .append(live(s + ".busy", "…"))
              .append("</td><td class=\"num\">")
              .append(live(s + ".inflight", "…"))
              .append("</td><td class=\"num\">")
              .append(Math.round(totals.getOrDefault("handled", 0.0)))
              .append("</td><td class=\"num\">")
              .append(Math.round(totals.getOrDefault("failed", 0.0)))
              .append("</td><td class=\"num\">")
              .append(live(s + ".parked", Math.round(totals.getOrDefault("parked", 0.0))))
              .append("</td></tr>");
        });
    b.append("</tbody></table></section>");
  }
}
