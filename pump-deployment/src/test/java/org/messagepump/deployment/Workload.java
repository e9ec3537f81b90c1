package org.messagepump.deployment;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.chaos.Work;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.chaos.kit.LedgerDrivers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueResult;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;

/**
 * Two pump processes' worth of pumps (each: a command pump, an event handler and a balancer pump,
 * on a pool of its own) draining what a producer thread writes, every handler recording each
 * delivery in the chaos {@link Ledger} inside the delivery's transaction. Pumps are named {@code
 * deploy-<kind>-<process>}.
 */
final class Workload implements AutoCloseable {

  static final String[] KINDS = {"commands", "events", "balancer"};
  static final String HANDLER_KEY = "deploy-events";
  static final String GROUP = "deploy";
  private static final int STREAMS = 8;
  private static final int KEYS = 16;

  private final DataSource admin;
  private final Ledger ledger;
  private final CommandQueue queue;
  private final EventStore store;
  private final MessageBalancer balancer;
  private final List<Long> streams = new ArrayList<>();
  private final List<HikariDataSource> pools = new ArrayList<>();
  private final List<MessagePump> pumps = new ArrayList<>();
  private final AtomicBoolean producing = new AtomicBoolean();
  private final AtomicLong produced = new AtomicLong();
  private final AtomicLong failedWrites = new AtomicLong();
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicLong slowestRoundMillis = new AtomicLong();
  private Thread producer;
  private long next;

  /**
   * Migrates, installs the ledger (emptied) and creates the event streams, all on {@code admin}.
   */
  Workload(DataSource admin) throws SQLException {
    this.admin = admin;
    CommandOperations.of(admin).migrate();
    EventOperations.of(admin).migrate();
    BalancerOperations.of(admin).migrate();
    this.ledger = Ledger.install(admin);
    try (Connection c = admin.getConnection()) {
      c.createStatement()
          .execute(
              "TRUNCATE chaos.acknowledged, chaos.ledger, chaos.marks, commandqueue.commands,"
                  + " balancer.messages, eventstream.handler_checkpoints,"
                  + " eventstream.events, eventstream.streams CASCADE");
    }
    this.queue = CommandQueue.create(admin, Work.CODEC);
    this.store = EventStore.create(admin, Work.CODEC);
    this.balancer = MessageBalancer.create(admin, GROUP);
    try (Connection c = admin.getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < STREAMS; i++) {
        streams.add(store.createStream(Tx.of(c)));
      }
      c.commit();
    }
  }

  Ledger ledger() {
    return ledger;
  }

  /**
   * Starts {@code processes} × 3 pumps with {@code workers} workers each; {@code poolUrl} is the
   * URL of their pools and {@code customize} may adjust each pump's builder (e.g. notifications).
   */
  void startPumps(
      String poolUrl, int processes, int workers, UnaryOperator<MessagePump.Builder> customize) {
    for (int p = 1; p <= processes; p++) {
      // workers + 2 per pump (docs/deployment.md), three pumps on the pool.
      HikariDataSource pool = Cluster.pool(poolUrl, "deploy-" + p, 3 * (workers + 2));
      pools.add(pool);
      for (String kind : KINDS) {
        String name = "deploy-" + kind + "-" + p;
        MessagePump pump =
            customize
                .apply(
                    MessagePump.builder(pool)
                        .name(name)
                        .driver(driver(kind, pool, name))
                        .workers(workers)
                        .pollInterval(Duration.ofMillis(200))
                        .backoff(Duration.ofMillis(50), Duration.ofSeconds(1))
                        .shutdownGrace(Duration.ofSeconds(5)))
                .build();
        pump.start();
        pumps.add(pump);
      }
    }
  }

  private Driver driver(String kind, DataSource pool, String node) {
    // No hand-offs here: every balancer message is done in its delivery.
    return LedgerDrivers.create(kind, pool, node, HANDLER_KEY, GROUP, 0);
  }

  /**
   * Starts writing: every {@code pauseMillis}, {@code perKind} commands, events and balancer
   * messages, each kind in a transaction of its own, acknowledged in the ledger once committed. A
   * write that fails (the primary is gone) is not acknowledged and the producer tries again.
   */
  void startProducing(int perKind, long pauseMillis) {
    producing.set(true);
    producer =
        new Thread(
            () -> {
              while (producing.get()) {
                long from = next;
                long to = from + perKind;
                long t0 = System.nanoTime();
                try {
                  acknowledge(enqueue(from, to));
                  acknowledge(append(from, to));
                  acknowledge(storeBalanced(from, to));
                  next = to;
                  rounds.incrementAndGet();
                  slowestRoundMillis.accumulateAndGet(
                      (System.nanoTime() - t0) / 1_000_000, Math::max);
                } catch (SQLException | RuntimeException e) {
                  failedWrites.incrementAndGet();
                  next = to; // the ids of a failed write are new ones next time anyway
                }
                Cluster.sleep(pauseMillis);
              }
            },
            "deploy-producer");
    producer.start();
  }

  /** Stops writing and returns the number of acknowledged messages. */
  long stopProducing() throws InterruptedException {
    producing.set(false);
    producer.join(60_000);
    return produced.get();
  }

  /** Messages acknowledged so far (the producer may still be writing). */
  long produced() {
    return produced.get();
  }

  /** Producer rounds that committed, and the slowest of them in ms. */
  long rounds() {
    return rounds.get();
  }

  long slowestRoundMillis() {
    return slowestRoundMillis.get();
  }

  long failedWrites() {
    return failedWrites.get();
  }

  private List<String> enqueue(long from, long to) {
    List<NewCommand> batch = new ArrayList<>();
    for (long i = from; i < to; i++) {
      batch.add(NewCommand.of(new Work(i)));
    }
    List<String> ids = new ArrayList<>();
    for (EnqueueResult r : queue.enqueueAll(batch)) {
      ids.add(r.messageId().toString());
    }
    return ids;
  }

  private List<String> append(long from, long to) throws SQLException {
    Map<Long, List<Object>> byStream = new LinkedHashMap<>();
    for (long i = from; i < to; i++) {
      byStream
          .computeIfAbsent(streams.get((int) (i % streams.size())), k -> new ArrayList<>())
          .add(new Work(i));
    }
    List<String> ids = new ArrayList<>();
    try (Connection c = admin.getConnection()) {
      c.setAutoCommit(false);
      for (Map.Entry<Long, List<Object>> e : byStream.entrySet()) {
        ids.addAll(store.appendTo(Tx.of(c), e.getKey(), e.getValue()).messageIds());
      }
      c.commit();
    }
    return ids;
  }

  private List<String> storeBalanced(long from, long to) throws SQLException {
    List<String> ids = new ArrayList<>();
    try (Connection c = admin.getConnection()) {
      c.setAutoCommit(false);
      for (long i = from; i < to; i++) {
        byte[] content = ByteBuffer.allocate(8).putLong(i).array();
        ids.add("b" + balancer.storeMessage(c, "k" + (i % KEYS), content, null));
      }
      c.commit();
    }
    return ids;
  }

  /** Acknowledges committed ids, retrying while the primary is away (they did commit). */
  private void acknowledge(List<String> ids) {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (true) {
      try {
        ledger.acknowledge(ids);
        produced.addAndGet(ids.size());
        return;
      } catch (RuntimeException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        Cluster.sleep(100);
      }
    }
  }

  /** The first delivery recorded by any pump of {@code kind} after {@code from}. */
  Optional<Duration> firstDeliveryAfter(String kind, Instant from) {
    Optional<Duration> best = Optional.empty();
    for (int p = 1; p <= pools.size(); p++) {
      Optional<Duration> d = ledger.recoveryAfter(from, "deploy-" + kind + "-" + p);
      if (d.isPresent() && (best.isEmpty() || d.get().compareTo(best.get()) < 0)) {
        best = d;
      }
    }
    return best;
  }

  /**
   * The longest time any pump connection has been idle in a transaction right now, in ms (0 when
   * none is).
   */
  long longestIdleInTransactionMillis() {
    return ledger.queryLong(
        "SELECT coalesce(max(extract(epoch FROM clock_timestamp() - state_change) * 1000), 0)"
            + "::bigint FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'"
            + " AND application_name LIKE 'deploy-%'");
  }

  /** Messages still waiting, all kinds. */
  long pending() {
    return ledger.queryLong(
        "SELECT (SELECT count(*) FROM commandqueue.commands)"
            + " + (SELECT count(*) FROM balancer.messages)"
            + " + (SELECT coalesce(sum(next_offset), 0) FROM eventstream.streams)"
            + " - (SELECT coalesce(sum(checkpoint_offset), 0) FROM eventstream.handler_checkpoints"
            + " WHERE handler_key = '"
            + HANDLER_KEY
            + "')");
  }

  @Override
  public void close() {
    producing.set(false);
    for (MessagePump p : pumps) {
      p.close();
    }
    for (HikariDataSource ds : pools) {
      ds.close();
    }
    pumps.clear();
    pools.clear();
  }
}
