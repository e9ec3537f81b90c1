package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;
import static org.messagepump.console.internal.Html.form;
import static org.messagepump.console.internal.Html.text;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.messagepump.balancer.GroupStats;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.PartitionStats;

/** Groups; per group its partitions with their heads, leases, parked keys and fairness. */
final class BalancerPage {

  static final int MAX_KEYS = 200;

  private BalancerPage() {}

  static String render(Request r, Stores stores) {
    String group = r.optional("group", MessageBalancer.MAX_NAME_LENGTH);
    List<GroupStats> groups = stores.groups();
    StringBuilder b = new StringBuilder();
    b.append("<section><h2>Groups</h2><table id=\"groups\"><thead><tr><th>group</th>")
        .append("<th>partitions</th><th>messages</th><th></th><th>leases</th><th>parked</th>")
        .append("<th>oldest head</th></tr></thead><tbody>");
    for (GroupStats g : groups) {
      b.append("<tr><td><a href=\"")
          .append(esc(r.base() + "/balancer?group=" + Html.url(g.group())))
          .append("\">")
          .append(esc(g.group()))
          .append("</a></td><td class=\"num\">")
          .append(g.partitions())
          .append("</td><td class=\"num\">")
          .append(Html.live("bal." + g.group() + ".messages", g.messages()))
          .append("</td><td>")
          .append(Html.spark("bal." + g.group() + ".messages"))
          .append("</td><td class=\"num\">")
          .append(g.leases())
          .append("</td><td class=\"num")
          .append(g.parked() > 0 ? " warn" : "")
          .append("\">")
          .append(g.parked())
          .append("</td><td class=\"num\">")
          .append(Html.age(g.oldestAge()))
          .append("</td></tr>");
    }
    if (groups.isEmpty()) {
      b.append("<tr><td colspan=\"7\" class=\"note\">No balancer groups.</td></tr>");
    }
    b.append("</tbody></table></section>");
    if (group == null && groups.size() == 1) {
      group = groups.get(0).group();
    }
    if (group != null) {
      String g = group;
      if (groups.stream().noneMatch(s -> s.group().equals(g))) {
        throw HttpError.notFound("no balancer group " + group);
      }
      long total =
          groups.stream().filter(s -> s.group().equals(g)).findFirst().orElseThrow().partitions();
      group(b, r, stores, stores.balancer(group), total);
    }
    return Html.page(r, "/balancer", "Balancer groups", b.toString());
  }

  private static void group(
      StringBuilder b, Request r, Stores stores, MessageBalancer balancer, long total) {
    Map<String, String> parked = balancer.parkedKeys();
    b.append("<section><h2>Parked keys of ")
        .append(esc(balancer.group()))
        .append("</h2><table id=\"parked-keys\"><thead><tr><th>key</th><th>reason</th><th></th>")
        .append("</tr></thead><tbody>");
    parked.forEach(
        (key, reason) -> {
          b.append("<tr><td class=\"key\">")
              .append(esc(key))
              .append("</td><td class=\"reason\">")
              .append(CommandsPage.reason(reason))
              .append("</td><td>");
          if (overLimit(key)) {
            b.append("<span class=\"note\">longer than the balancer's ")
                .append(MessageBalancer.MAX_NAME_LENGTH)
                .append("-byte limit: only SQL can unpark it</span>");
          } else if (!r.config().readOnly()) {
            b.append(
                form(
                    r,
                    "keys/unpark",
                    "Unpark key " + key + "? Its messages are delivered again.",
                    text("group", balancer.group()) + text("key", key),
                    "Unpark"));
          }
          b.append("</td></tr>");
        });
    if (parked.isEmpty()) {
      b.append("<tr><td colspan=\"3\" class=\"note\">No parked keys.</td></tr>");
    }
    b.append("</tbody></table></section>");

    List<PartitionStats> keys = new ArrayList<>();
    List<String> unreadable = new ArrayList<>();
    for (String key : stores.hottestKeys(balancer.group(), MAX_KEYS)) {
      if (overLimit(key)) {
        unreadable.add(key); // stored by other means than the API, which would refuse it
      } else {
        balancer.partitionStats(key).ifPresent(keys::add);
      }
    }
    keys.sort(Comparator.comparingLong(PartitionStats::messageCount).reversed());
    fairness(b, keys);
    b.append("<section><h2>Partitions</h2><p class=\"note\">")
        .append(keys.size())
        .append(" of ")
        .append(total)
        .append(" keys: the ")
        .append(MAX_KEYS)
        .append(" with the most messages, most first. The head is a key's oldest message; a leased")
        .append(" head is in flight downstream.</p><table id=\"partitions\"><thead><tr>")
        .append("<th>key</th><th>messages</th><th>head age</th><th>in flight</th>")
        .append("<th>leased message</th><th>lease expires in</th><th>failures</th>")
        .append("<th>resume at</th><th>parked</th></tr></thead><tbody>");
    Instant now = Instant.now();
    for (PartitionStats s : keys) {
      b.append("<tr><td class=\"key\">")
          .append(esc(s.partitionKey()))
          .append("</td><td class=\"num\">")
          .append(s.messageCount())
          .append("</td><td class=\"num\">")
          .append(Html.age(s.oldestAge()))
          .append("</td><td>")
          .append(s.locked() ? "handler" : s.leasedMessageId() != null ? "lease" : "")
          .append("</td><td class=\"num\">")
          .append(s.leasedMessageId() == null ? "" : s.leasedMessageId())
          .append("</td><td class=\"num\">")
          .append(
              s.leaseUntil() == null
                  ? ""
                  : Html.age(
                      Duration.between(now, s.leaseUntil()).isNegative()
                          ? Duration.ZERO
                          : Duration.between(now, s.leaseUntil())))
          .append("</td><td class=\"num\">")
          .append(s.failures())
          .append("</td><td>")
          .append(Html.time(s.resumeAt()))
          .append("</td><td>")
          .append(s.parked() ? "yes" : "")
          .append("</td></tr>");
    }
    for (String key : unreadable) {
      b.append("<tr><td class=\"key\">")
          .append(esc(key))
          .append("</td><td colspan=\"8\" class=\"note\">longer than the balancer's ")
          .append(MessageBalancer.MAX_NAME_LENGTH)
          .append("-byte limit: its figures cannot be read through the balancer's API</td></tr>");
    }
    b.append("</tbody></table></section>");
  }

  private static boolean overLimit(String key) {
    return key.getBytes(java.nio.charset.StandardCharsets.UTF_8).length
        > MessageBalancer.MAX_NAME_LENGTH;
  }

  /** Fairness at a glance: messages per key as bars, and how uneven the heads' ages are. */
  private static void fairness(StringBuilder b, List<PartitionStats> keys) {
    b.append("<section><h2>Fairness</h2>");
    if (keys.isEmpty()) {
      b.append("<p class=\"note\">No messages waiting.</p></section>");
      return;
    }
    long max = keys.get(0).messageCount();
    double mean = keys.stream().mapToLong(PartitionStats::messageCount).average().orElse(0);
    List<Duration> ages = keys.stream().map(PartitionStats::oldestAge).sorted().toList();
    b.append("<p>Messages per key: most ")
        .append(max)
        .append(", mean ")
        .append(String.format(java.util.Locale.ROOT, "%.1f", mean))
        .append(" (ratio ")
        .append(String.format(java.util.Locale.ROOT, "%.1f", mean == 0 ? 0 : max / mean))
        .append("). Head age: youngest ")
        .append(Html.age(ages.get(0)))
        .append(", median ")
        .append(Html.age(ages.get(ages.size() / 2)))
        .append(", oldest ")
        .append(Html.age(ages.get(ages.size() - 1)))
        .append(". Keys are served in rotation, so heads of similar age mean a fair share.</p>");
    int shown = Math.min(30, keys.size());
    int height = shown * 14 + 4;
    b.append("<svg class=\"bars\" viewBox=\"0 0 400 ")
        .append(height)
        .append("\" width=\"400\" height=\"")
        .append(height)
        .append("\" role=\"img\" aria-label=\"messages per key\">");
    for (int i = 0; i < shown; i++) {
      PartitionStats s = keys.get(i);
      long w = max == 0 ? 0 : Math.max(1, Math.round(250.0 * s.messageCount() / max));
      int y = 2 + i * 14;
      b.append("<text x=\"0\" y=\"")
          .append(y + 10)
          .append("\">")
          .append(
              esc(
                  s.partitionKey().length() > 18
                      ? s.partitionKey().substring(0, 17) + "…"
                      : s.partitionKey()))
          .append("</text><rect x=\"120\" y=\"")
          .append(y)
          .append("\" width=\"")
          .append(w)
          .append("\" height=\"11\"")
          .append(s.parked() ? " class=\"parked\"" : "")
          .append("/><text x=\"")
          .append(124 + w)
          .append("\" y=\"")
          .append(y + 10)
          .append("\">")
          .append(s.messageCount())
          .append("</text>");
    }
    b.append("</svg></section>");
  }
}
