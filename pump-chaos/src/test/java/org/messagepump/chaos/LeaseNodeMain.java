package org.messagepump.chaos;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.NodeProcess;
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.core.spi.Outcome;

/**
 * A command-pump node in lease mode, in its own JVM: {@code LeaseNodeMain <jdbcUrl> <user>
 * <password> <node> <workers> <leaseMs> <minHandlerMs> <maxHandlerMs> <maxFailures>}.
 *
 * <p>Its handler records the start of each run in {@code chaos.runs} (committed at once: lease mode
 * holds no transaction while it runs), then sleeps between {@code minHandlerMs} and {@code
 * maxHandlerMs}. Each completion is recorded in the {@link Ledger} by the driver's {@code
 * completed}, in the completion's own transaction, with the fencing token of the completing claim
 * as the ledger row's {@code position}: a ledger row exists exactly for each completion that
 * committed. The node writes the mark {@code ready:<node>} once started, and when its standard
 * input closes it stops its pump and prints one line {@code meters <node>: name{tags}=value ...}
 * with its lease and delivery counters.
 */
public final class LeaseNodeMain {

  /** The prefix of the line of meters printed at exit. */
  public static final String METERS_LINE = "meters ";

  private LeaseNodeMain() {}

  /** Runs the node until standard input closes. */
  public static void main(String[] args) throws IOException {
    String node = args[3];
    int workers = Integer.parseInt(args[4]);
    Duration lease = Duration.ofMillis(Long.parseLong(args[5]));
    long minMs = Long.parseLong(args[6]);
    long maxMs = Long.parseLong(args[7]);
    int maxFailures = Integer.parseInt(args[8]);
    HikariDataSource ds = NodeMain.pool(args[0], args[1], args[2], node, workers + 4);
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    CommandQueue queue = CommandQueue.builder(ds).codec(Work.CODEC).meterRegistry(meters).build();
    queue.operations().depth(); // warm-up: class loading of a cold JVM is not the pump's recovery
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Work.class,
                (w, ctx) -> {
                  long token = ctx.fencingToken().orElseThrow();
                  CompletionLedger.TOKEN.set(token);
                  Ledger.recordRun(ds, ctx.messageId().toString(), ctx.attempt(), node, token);
                  long ms =
                      maxMs > minMs
                          ? ThreadLocalRandom.current().nextLong(minMs, maxMs + 1)
                          : minMs;
                  Thread.sleep(ms);
                })
            .build();
    Driver driver =
        new CompletionLedger(
            queue.driver(handlers, CommandDriverOptions.defaults().withLease(lease)), node);
    MessagePump pump =
        MessagePump.builder(ds)
            .name(node)
            .driver(driver)
            .workers(workers)
            .pollInterval(Duration.ofMillis(100))
            .backoff(Duration.ofMillis(50), Duration.ofSeconds(1))
            .maxFailures(maxFailures)
            .shutdownGrace(Duration.ofSeconds(5))
            .meterRegistry(meters)
            .build();
    pump.start();
    Ledger.install(ds).mark("ready:" + node);
    while (System.in.read() >= 0) {
      // wait for the end of input
    }
    pump.close();
    System.out.println(meterLine(node, meters));
    System.out.flush();
    ds.close();
  }

  /**
   * {@code meters <node>: name{tags}=count ...} for the counters of leases and deliveries, summed
   * over message types; every delivery outcome is listed, 0 when none was counted.
   */
  static String meterLine(String node, SimpleMeterRegistry meters) {
    java.util.Map<String, Long> counts = new java.util.TreeMap<>();
    for (String outcome : List.of("handled", "busy", "failed", "parked", "abandoned")) {
      counts.put("messagepump.deliveries{outcome=" + outcome + "}", 0L);
    }
    for (Meter m : meters.getMeters()) {
      String name = m.getId().getName();
      if (m instanceof Counter c
          && (name.startsWith("messagepump.leases.")
              || name.equals("messagepump.commands.leases.expired")
              || name.equals("messagepump.deliveries"))) {
        StringBuilder sb = new StringBuilder(name);
        for (Tag t : m.getId().getTags()) {
          if (!List.of("pump", "driver", "type").contains(t.getKey())) {
            sb.append('{').append(t.getKey()).append('=').append(t.getValue()).append('}');
          }
        }
        counts.merge(sb.toString(), (long) c.count(), Long::sum);
      }
    }
    List<String> parts = new ArrayList<>();
    counts.forEach((k, v) -> parts.add(k + "=" + v));
    Collections.sort(parts);
    return METERS_LINE + node + ": " + String.join(" ", parts);
  }

  /**
   * The counters the node printed at its last graceful exit ({@link #meterLine}), read from its
   * log: name (with its other tags in braces) to count. Fails when the node printed none.
   */
  static Map<String, Long> meters(NodeProcess node) {
    String prefix = METERS_LINE + node.name() + ": ";
    List<String> lines;
    try {
      lines = Files.readAllLines(node.log());
    } catch (IOException e) {
      throw new IllegalStateException("chaos: cannot read " + node.log(), e);
    }
    String last = null;
    for (String l : lines) {
      if (l.startsWith(prefix)) {
        last = l;
      }
    }
    if (last == null) {
      throw new IllegalStateException("chaos: node " + node.name() + " printed no meters");
    }
    Map<String, Long> out = new TreeMap<>();
    for (String part : last.substring(prefix.length()).split(" ")) {
      if (!part.isEmpty()) {
        int eq = part.lastIndexOf('=');
        out.put(part.substring(0, eq), Long.parseLong(part.substring(eq + 1)));
      }
    }
    return out;
  }

  /**
   * The leased driver, recording each completion in the ledger inside the completion's transaction,
   * after the fenced delete: a refused completion rolls back and leaves no row.
   */
  static final class CompletionLedger extends ForwardingDriver {

    /** The fencing token of the delivery the current thread's handler runs. */
    static final ThreadLocal<Long> TOKEN = new ThreadLocal<>();

    private final String node;
    private final Map<Delivery, Long> tokens = Collections.synchronizedMap(new IdentityHashMap<>());

    CompletionLedger(Driver delegate, String node) {
      super(delegate);
      this.node = node;
    }

    @Override
    public Outcome handle(Tx tx, Delivery delivery) throws Exception {
      TOKEN.remove();
      try {
        return super.handle(tx, delivery);
      } finally {
        Long token = TOKEN.get();
        TOKEN.remove();
        if (token != null) {
          tokens.put(delivery, token);
        }
      }
    }

    @Override
    public void completed(Tx tx, List<Delivery> handled) throws SQLException {
      try {
        super.completed(tx, handled);
        for (Delivery d : handled) {
          Long token = tokens.get(d);
          if (token == null) {
            throw new IllegalStateException("no fencing token seen for " + d.messageId());
          }
          Ledger.record(tx.connection(), d.messageId(), d.attempt(), node, null, token);
        }
      } finally {
        for (Delivery d : handled) {
          tokens.remove(d);
        }
      }
    }

    @Override
    public void postpone(Tx tx, Delivery delivery, int failures, Duration delay)
        throws SQLException {
      tokens.remove(delivery);
      super.postpone(tx, delivery, failures, delay);
    }

    @Override
    public void park(Tx tx, Delivery delivery, int failures, String reason) throws SQLException {
      tokens.remove(delivery);
      super.park(tx, delivery, failures, reason);
    }
  }
}
