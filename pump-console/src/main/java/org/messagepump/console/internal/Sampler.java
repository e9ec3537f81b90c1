package org.messagepump.console.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.messagepump.balancer.GroupStats;
import org.messagepump.commands.QueueDepth;
import org.messagepump.eventstream.Checkpoint;

/**
 * The live charts' data: a sample of every figure, taken when a browser asks and the last one is
 * older than {@link #MIN_INTERVAL_MS} (so nobody looking means no load), kept for {@link #KEPT}
 * samples. Rates (handled/s, events/s) are differences between two samples.
 */
public final class Sampler {

  static final long MIN_INTERVAL_MS = 1_500;
  static final int KEPT = 200;

  private final Stores stores;
  private final MeterRegistry registry;
  private final Deque<Long> times = new ArrayDeque<>();
  private final Map<String, Deque<Double>> series = new TreeMap<>();
  private final Map<String, Double> lastTotals = new LinkedHashMap<>();
  private long lastAt;

  public Sampler(Stores stores, MeterRegistry registry) {
    this.stores = stores;
    this.registry = registry;
  }

  /** The samples as {@code {"t": [epoch ms…], "series": {name: [value or null…]}}}. */
  public synchronized Map<String, Object> samples() {
    long now = System.currentTimeMillis();
    if (now - lastAt >= MIN_INTERVAL_MS) {
      take(now);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("t", new ArrayList<>(times));
    Map<String, Object> s = new LinkedHashMap<>();
    series.forEach((k, v) -> s.put(k, new ArrayList<>(v)));
    out.put("series", s);
    return out;
  }

  private void take(long now) {
    double seconds = lastAt == 0 ? 0 : (now - lastAt) / 1000.0;
    Map<String, Double> v = new LinkedHashMap<>();
    QueueDepth depth = stores.commands().depth();
    v.put("cmd.due", (double) depth.due());
    v.put("cmd.delayed", (double) depth.delayed());
    v.put("cmd.dead", (double) depth.deadLetters());
    for (String key : stores.handlers().handlerKeys()) {
      long lag = 0;
      long parked = 0;
      long position = 0;
      for (Checkpoint c : stores.handlers().checkpoints(key)) {
        lag += c.lag();
        parked += c.parked() ? 1 : 0;
        position += c.offset();
      }
      v.put("ev." + key + ".lag", (double) lag);
      v.put("ev." + key + ".parked", (double) parked);
      rate(v, "ev." + key + ".rate", position, seconds);
    }
    for (GroupStats g : stores.groups()) {
      v.put("bal." + g.group() + ".messages", (double) g.messages());
      v.put("bal." + g.group() + ".leases", (double) g.leases());
      v.put("bal." + g.group() + ".parked", (double) g.parked());
    }
    if (registry != null) {
      for (Counter c : registry.find("messagepump.deliveries").counters()) {
        String pump = c.getId().getTag("pump");
        String outcome = c.getId().getTag("outcome");
        if (pump == null || outcome == null) {
          continue;
        }
        String name = "pump." + pump + "." + outcome;
        if (outcome.equals("parked")) {
          v.put(name, c.count());
        } else {
          rate(v, name, c.count(), seconds);
        }
      }
      for (Gauge g : registry.find("messagepump.inflight").gauges()) {
        String pump = g.getId().getTag("pump");
        if (pump != null) {
          v.put("pump." + pump + ".inflight", g.value());
        }
      }
    }
    append(now, v);
    lastAt = now;
  }

  private void rate(Map<String, Double> v, String name, double total, double seconds) {
    Double before = lastTotals.put(name, total);
    v.put(name, before == null || seconds <= 0 ? null : Math.max(0, (total - before) / seconds));
  }

  private void append(long now, Map<String, Double> v) {
    int length = times.size();
    times.addLast(now);
    for (Map.Entry<String, Double> e : v.entrySet()) {
      series.computeIfAbsent(
          e.getKey(),
          k -> {
            Deque<Double> d = new LinkedList<>(); // holds nulls (gaps), which ArrayDeque refuses
            for (int i = 0; i < length; i++) {
              d.add(null);
            }
            return d;
          });
    }
    for (Map.Entry<String, Deque<Double>> e : series.entrySet()) {
      e.getValue().addLast(v.get(e.getKey()));
    }
    if (times.size() > KEPT) {
      times.removeFirst();
      series.values().forEach(Deque::removeFirst);
    }
    List<String> gone = new ArrayList<>();
    series.forEach(
        (k, d) -> {
          if (d.stream().allMatch(x -> x == null) && !v.containsKey(k)) {
            gone.add(k);
          }
        });
    gone.forEach(series::remove);
  }
}
