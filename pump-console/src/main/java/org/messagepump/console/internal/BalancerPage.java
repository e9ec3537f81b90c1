package org.messagepump.console.internal;

import static org.messagepump.console.internal.Html.esc;
import static org.messagepump.console.internal.Html.form;
import static org.messagepump.console.internal.Html.text;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.ParkedKey;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.PartitionStats;

/** Groups; per group its partitions with their heads, leases, parked keys and fairness. */
final class BalancerPage {

  /** Keys a page of partitions shows. */
  static final int PAGE = 50;

  private BalancerPage() {}

  static String render(Request r, Stores stores, Sampler.Snapshot snapshot) {
    String group = r.optional("group", MessageBalancer.MAX_NAME_LENGTH);
    List<GroupStats> groups = snapshot.groupsOrThrow();
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
      group(b, r, stores, stores.balancer(), group, total);
    }
    return Html.page(r, "/balancer", "Balancer groups", b.toString());
  }

  private static void group(
      StringBuilder b,
      Request r,
      Stores stores,
      BalancerOperations balancer,
      String group,
      long total) {
    ParkedKey parkedAfter = null;
    String afterParked = r.optional("parked_after_key", 4 * MessageBalancer.MAX_NAME_LENGTH);
    if (afterParked != null) {
      String at = r.required("parked_after_at", 40);
      try {
        parkedAfter = new ParkedKey(afterParked, null, Instant.parse(at));
      } catch (java.time.format.DateTimeParseException e) {
        throw HttpError.badRequest("parameter parked_after_at is not an instant: " + at);
      }
    }
    List<ParkedKey> parked = balancer.parkedKeys(group, parkedAfter, PAGE);
    b.append("<section><h2>Parked keys of ")
        .append(esc(group))
        .append("</h2><p class=\"note\">")
        .append("The oldest parked first, ")
        .append(PAGE)
        .append(" a page.")
        .append("</p><table id=\"parked-keys\"><thead><tr><th>key</th><th>parked</th>")
        .append("<th>reason</th><th></th></tr></thead><tbody>");
    for (ParkedKey p : parked) {
      String key = p.partitionKey();
      b.append("<tr><td class=\"key\">")
          .append(esc(key))
          .append("</td><td>")
          .append(Html.time(p.parkedAt()))
          .append("</td><td class=\"reason\">")
          .append(CommandsPage.reason(p.reason()))
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
                text("group", group) + text("key", key),
                "Unpark"));
      }
      b.append("</td></tr>");
    }
    if (parked.isEmpty()) {
      b.append("<tr><td colspan=\"4\" class=\"note\">No parked keys.</td></tr>");
    }
    b.append("</tbody></table>");
    if (parked.size() == PAGE) {
      ParkedKey last = parked.get(parked.size() - 1);
      b.append("<p><a id=\"next-parked\" href=\"")
          .append(
              esc(
                  r.base()
                      + "/balancer?group="
                      + Html.url(group)
                      + "&parked_after_at="
                      + Html.url(last.parkedAt().toString())
                      + "&parked_after_key="
                      + Html.url(last.partitionKey())))
          .append("\">Next ")
          .append(PAGE)
          .append(" parked keys</a></p>");
    }
    b.append("</section>");

    Stores.KeyCount after = null;
    if (r.optional("after_key", 4 * MessageBalancer.MAX_NAME_LENGTH) != null) {
      long messages = r.longParam("after_messages");
      if (messages < 0) {
        throw HttpError.badRequest("parameter after_messages must not be negative: " + messages);
      }
      after =
          new Stores.KeyCount(
              r.required("after_key", 4 * MessageBalancer.MAX_NAME_LENGTH), messages);
    }
    List<Stores.KeyCount> hottest = stores.hottestKeys(group, after, PAGE);
    List<String> readable = new ArrayList<>();
    List<String> unreadable = new ArrayList<>();
    for (Stores.KeyCount k : hottest) {
      if (overLimit(k.key())) {
        unreadable.add(k.key()); // stored by other means than the API, which would refuse it
      } else {
        readable.add(k.key());
      }
    }
    List<PartitionStats> keys = new ArrayList<>(balancer.partitionStats(group, readable));
    keys.sort(
        Comparator.comparingLong(PartitionStats::messageCount)
            .reversed()
            .thenComparing(PartitionStats::partitionKey));
    if (after == null) {
      fairness(b, keys);
    }
    b.append("<section><h2>Partitions</h2><p class=\"note\">")
        .append(total)
        .append(" keys; the keys with the most messages first, ")
        .append(PAGE)
        .append(" a page")
        .append(after == null ? "" : " (a later page)")
        .append(". The head is a key's oldest message; a leased")
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
    b.append("</tbody></table>");
    if (hottest.size() == PAGE) {
      Stores.KeyCount last = hottest.get(hottest.size() - 1);
      b.append("<p><a id=\"next-keys\" href=\"")
          .append(
              esc(
                  r.base()
                      + "/balancer?group="
                      + Html.url(group)
                      + "&after_messages="
                      + last.messages()
                      + "&after_key="
                      + Html.url(last.key())))
          .append("\">Next ")
          .append(PAGE)
          .append(" keys</a></p>");
    }
    b.append("</section>");
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
