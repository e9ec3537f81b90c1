package org.messagepump.console.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.commands.QueueDepth;
import org.messagepump.eventstream.HandlerLag;

/**
 * The figures every page and API client shares: one snapshot, taken by one thread of its own when
 * someone asks and the last one is older than the interval, so the database sees one round of
 * sampling queries per interval however many pages and clients are open (and none while nobody
 * looks). Concurrent askers wait for the same round (single flight). The charts keep {@link #KEPT}
 * samples; rates (handled/s, events/s) are differences between two samples. {@link #close} stops
 * the thread.
 */
public final class Sampler implements AutoCloseable {

  static final int KEPT = 200;
  private static final long WAIT_MS = 60_000;
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * One round's figures. A driver whose figures could not be read (its schema missing, say) has
   * them {@code null} and the failure kept: the other drivers' pages still work.
   *
   * @param at when the round began (epoch ms)
   * @param done when it ended (epoch ms): it is fresh for an interval from then
   * @param generation the {@link #invalidate} count when the round began
   * @param depth the command queue's depth, or null
   * @param handlers each event handler's lag, or null
   * @param groups each balancer group's figures, or null
   * @param failures why a part is null, by part ({@code commands}, {@code events}, {@code
   *     balancer})
   * @param json the charts' samples as {@code {"t": [epoch ms…], "series": {name: [value…]}}}
   */
  public record Snapshot(
      long at,
      long done,
      long generation,
      QueueDepth depth,
      List<HandlerLag> handlers,
      List<GroupStats> groups,
      Pauses pauses,
      Map<String, RuntimeException> failures,
      byte[] json) {

    /** What is paused cluster-wide; its read's failure when it could not be read. */
    Pauses pausesOrThrow() {
      return orThrow(pauses, "pauses");
    }

    /** The command queue's depth; its read's failure when it could not be read. */
    QueueDepth depthOrThrow() {
      return orThrow(depth, "commands");
    }

    /** Each handler's lag; its read's failure when it could not be read. */
    List<HandlerLag> handlersOrThrow() {
      return orThrow(handlers, "events");
    }

    /** Each group's figures; its read's failure when it could not be read. */
    List<GroupStats> groupsOrThrow() {
      return orThrow(groups, "balancer");
    }

    private <T> T orThrow(T part, String name) {
      if (part == null) {
        throw failures.get(name);
      }
      return part;
    }
  }

  /**
   * What is paused cluster-wide in each driver: command types, event handlers, balancer groups.
   *
   * @param types the paused command types, by name
   * @param handlers the paused event handlers, by key
   * @param groups the paused balancer groups, by name
   */
  public record Pauses(
      List<org.messagepump.core.Pause> types,
      List<org.messagepump.core.Pause> handlers,
      List<org.messagepump.core.Pause> groups) {}

  private final Stores stores;
  private final MeterReadings meters;
  private final long intervalMs;
  private final ExecutorService thread;
  private final AtomicLong generation = new AtomicLong();
  private final Object lock = new Object();
  private Snapshot latest; // guarded by lock
  private CompletableFuture<Snapshot> inFlight; // guarded by lock

  // Touched by the sampling thread only.
  private final Deque<Long> times = new ArrayDeque<>();
  private final Map<String, Deque<Double>> series = new TreeMap<>();
  private final Map<String, Double> lastTotals = new LinkedHashMap<>();
  private long lastAt;

  /** A sampler whose snapshot serves for {@code intervalMs} after its round ended. */
  public Sampler(Stores stores, MeterReadings meters, long intervalMs) {
    this.stores = stores;
    this.meters = meters;
    this.intervalMs = intervalMs;
    this.thread =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "pump-console-sampler");
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * The latest snapshot when no action ran since it began; when it is older than the interval, the
   * next round starts (one at a time) and this one is still served, so no page waits for the
   * database's figures but the first and those after an action, which wait for the next round,
   * shared with every other caller waiting for it.
   */
  public Snapshot current() {
    long wanted = generation.get();
    while (true) {
      CompletableFuture<Snapshot> round;
      synchronized (lock) {
        boolean current = latest != null && latest.generation() >= wanted;
        if (current && System.currentTimeMillis() - latest.done() < intervalMs) {
          return latest;
        }
        if (inFlight == null) {
          long g = generation.get();
          // The task publishes its snapshot before its future completes, under this lock, which
          // this thread holds until inFlight is set: so a woken waiter sees latest updated.
          inFlight = CompletableFuture.supplyAsync(() -> publish(g), thread);
        }
        if (current) {
          // Older than the interval but no action since: served now, the next round under way.
          return latest;
        }
        round = inFlight;
      }
      Snapshot s = await(round);
      if (s.generation() >= wanted) {
        return s;
      }
    }
  }

  /** The charts' samples as JSON (see {@link Snapshot#json}). */
  public byte[] json() {
    return current().json();
  }

  /** Makes the next {@link #current} read the database again: an action changed something. */
  public void invalidate() {
    generation.incrementAndGet();
  }

  /** Stops the sampling thread; a round under way is interrupted. */
  @Override
  public void close() {
    thread.shutdownNow();
    try {
      if (!thread.awaitTermination(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the console's sampling thread did not stop in 10 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static Snapshot await(CompletableFuture<Snapshot> round) {
    try {
      return round.get(WAIT_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the console's figures", e);
    } catch (TimeoutException e) {
      throw new IllegalStateException("the console's figures took over " + WAIT_MS + " ms", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException("reading the console's figures failed", e.getCause());
    }
  }

  private Snapshot publish(long generation) {
    Snapshot s = null;
    try {
      s = take(generation);
      return s;
    } finally {
      synchronized (lock) {
        if (s != null) {
          latest = s;
        }
        inFlight = null;
      }
    }
  }

  private Snapshot take(long generation) {
    long now = System.currentTimeMillis();
    double seconds = lastAt == 0 ? 0 : (now - lastAt) / 1000.0;
    Map<String, RuntimeException> failures = new LinkedHashMap<>();
    QueueDepth depth = part("commands", failures, () -> stores.commands().depth());
    List<HandlerLag> handlers = part("events", failures, () -> stores.events().lagSummaries());
    // Handled = appended - added lag: one sum over the streams, whatever the handlers.
    Long events =
        handlers == null || handlers.isEmpty()
            ? null
            : part("events", failures, () -> stores.events().eventCount());
    List<GroupStats> groups = part("balancer", failures, stores::groups);
    Pauses pauses = part("pauses", failures, stores::pauses);
    Map<String, Double> v = new LinkedHashMap<>();
    if (depth != null) {
      v.put("cmd.due", (double) depth.due());
      v.put("cmd.delayed", (double) depth.delayed());
      v.put("cmd.leased", (double) depth.leased());
      v.put("cmd.dead", (double) depth.deadLetters());
    }
    if (events != null) {
      for (HandlerLag h : handlers) {
        String key = "ev." + h.handlerKey();
        v.put(key + ".lag", (double) h.lag());
        v.put(key + ".parked", (double) h.parkedStreams());
        rate(v, key + ".rate", events - h.lag(), seconds);
      }
    }
    for (GroupStats g : groups == null ? List.<GroupStats>of() : groups) {
      v.put("bal." + g.group() + ".messages", (double) g.messages());
      v.put("bal." + g.group() + ".leases", (double) g.leases());
      v.put("bal." + g.group() + ".parked", (double) g.parked());
    }
    meters(v, seconds);
    append(now, v);
    lastAt = now;
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("t", new ArrayList<>(times));
    Map<String, Object> s = new LinkedHashMap<>();
    series.forEach((k, d) -> s.put(k, new ArrayList<>(d)));
    out.put("series", s);
    try {
      byte[] json = JSON.writeValueAsBytes(out);
      return new Snapshot(
          now,
          System.currentTimeMillis(),
          generation,
          depth,
          handlers == null ? null : List.copyOf(handlers),
          groups == null ? null : List.copyOf(groups),
          pauses,
          Map.copyOf(failures),
          json);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("writing the console's samples as JSON", e);
    }
  }

  /** One driver's read; its failure kept under {@code name} (the first one), null returned. */
  private static <T> T part(
      String name, Map<String, RuntimeException> failures, java.util.function.Supplier<T> read) {
    try {
      return read.get();
    } catch (RuntimeException e) {
      failures.putIfAbsent(name, e);
      return null;
    }
  }

  private void meters(Map<String, Double> v, double seconds) {
    if (meters == null) {
      return;
    }
    for (MeterReadings.Deliveries c : meters.deliveries()) {
      String name = "pump." + c.pump() + "." + c.outcome();
      if (c.outcome().equals("parked")) {
        v.put(name, c.count());
      } else {
        rate(v, name, c.count(), seconds);
      }
    }
    for (MeterReadings.InFlight g : meters.inFlight()) {
      v.put("pump." + g.pump() + ".inflight", g.value());
    }
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
