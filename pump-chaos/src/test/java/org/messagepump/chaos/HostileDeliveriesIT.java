package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.chaos.Hostile.Case;
import org.messagepump.chaos.Hostile.Config;
import org.messagepump.chaos.Hostile.CountingDriver;
import org.messagepump.chaos.Hostile.ErrLines;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.chaos.kit.Ledger;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.AppendResult;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 10, cases 1 to 7: N good messages and one hostile one (a handler throwing a NUL-bearing
 * reason, an undecodable payload quoting NUL, another connection's 08006, a StackOverflowError, an
 * AssertionError, a commit or close of the pump's connection, a deferred constraint failing the
 * commit, wrongly shaped stored headers) on each driver: the hostile delivery parks after exactly
 * {@value #MAX_FAILURES} failures, is acquired no more often than that plus once per failed commit
 * (see {@link #assertAcquisitions}), logs a bounded number of lines and leaves no transaction open;
 * every good message is handled exactly once; the time the rest of the queue takes is reported
 * against a clean run of the same size.
 */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class HostileDeliveriesIT {

  static final int MAX_FAILURES = 3;

  /**
   * Most lines the pump's loggers write (stack traces included) while one hostile run goes on: a
   * WARN per counted failure, the park, the start and close lines, and some slack.
   */
  static final int MAX_LOG_LINES = 3 * MAX_FAILURES + 5;

  /** A run stops waiting when nothing moved for this long (a stall is then reported). */
  static final Duration STALL = Duration.ofSeconds(5);

  private static final Map<String, Double> CLEAN_SECONDS = new HashMap<>();

  static Stream<Arguments> runs() {
    List<Config> configs =
        Chaos.full() ? List.of(new Config(1, 10), new Config(4, 1)) : List.of(new Config(1, 10));
    List<Arguments> out = new ArrayList<>();
    for (String driver : List.of("commands", "events", "balancer")) {
      for (Config config : configs) {
        for (Case c : cases(driver)) {
          out.add(Arguments.of(driver, c, config));
        }
      }
    }
    return out.stream();
  }

  /** The balancer has no headers: its properties are any JSON object (a CHECK keeps them so). */
  static Set<Case> cases(String driver) {
    return driver.equals("balancer")
        ? EnumSet.complementOf(EnumSet.of(Case.BAD_HEADERS))
        : EnumSet.allOf(Case.class);
  }

  @BeforeAll
  static void schemas(TestDatabase db) {
    CommandOperations.of(db.dataSource()).migrate();
    EventOperations.of(db.dataSource()).migrate();
    BalancerOperations.of(db.dataSource()).migrate();
    Ledger.install(db.dataSource());
    db.execute(Hostile.SCHEMA);
  }

  @ParameterizedTest(name = "{0} {1} {2}")
  @MethodSource("runs")
  void hostileDeliveryParksAndTheRestFlows(String driver, Case c, Config config, TestDatabase db)
      throws Exception {
    int n = Chaos.size(2_000, 200);
    Rig rig = rig(driver, db.dataSource());
    Ledger ledger = Ledger.install(db.dataSource());
    double clean = clean(rig, ledger, db, n, config);

    reset(rig, ledger, db);
    String hostileId = rig.hostile(c);
    rig.good(ledger, n);
    AtomicInteger handlerCalls = new AtomicInteger();
    CountingDriver counting = new CountingDriver(rig.driver(handlerCalls, c));
    counting.hostileId(hostileId);
    Run run;
    try (ErrLines err = new ErrLines()) {
      run = drain(db.dataSource(), rig, ledger, counting, config, n, true);
      run = run.withLines(err.lines(), err.pumpLines(), err.warnOrError(), err.commitFailures());
    }
    Rig.Parked parked = rig.parked();
    Ledger.Figures f = ledger.figures();
    long effects = db.queryLong("SELECT count(*) FROM hostile.effects");
    long idleInTx = idleInTransaction(db);
    double ratio = run.seconds() / clean;
    ChaosReport.of("10-hostile-" + driver + "-" + c.label)
        .put("config", config.label())
        .put("good", n)
        .put("maxFailures", MAX_FAILURES)
        .put(f)
        .put("hostileParked", parked.parked())
        .put("hostileFailures", parked.failures())
        .put("parkedTotal", parked.parkedTotal())
        .put("hostileReason", parked.reason() == null ? null : abbreviate(parked.reason()))
        .put("hostileAcquisitions", counting.acquisitions.get())
        .put("hostileHandlerCalls", handlerCalls.get())
        .put("commitFailures", run.commitFailures())
        .put("hostileEffects", effects)
        .put("logLines", run.lines())
        .put("logWarnOrError", run.warnOrError())
        .put("stderrLines", run.errLines())
        .put("idleInTransaction", idleInTx)
        .put("stalled", run.stalled())
        .put("restSeconds", round(run.seconds()))
        .put("cleanSeconds", round(clean))
        .put("restVsClean", round(ratio))
        .write();

    assertThat(run.stalled())
        .as("the run stalled (nothing moved for %s): %s", STALL, run.progress())
        .isFalse();
    assertThat(f.handled()).as("good messages handled").isEqualTo(n);
    assertThat(f.lost()).as("good messages lost").isZero();
    assertThat(f.duplicates()).as("good messages handled twice").isZero();
    assertThat(parked.parked()).as("hostile delivery parked").isTrue();
    assertThat(parked.failures()).as("hostile delivery's counted failures").isEqualTo(MAX_FAILURES);
    assertThat(parked.parkedTotal()).as("parked deliveries (the hostile one only)").isOne();
    assertAcquisitions(
        c == Case.DEFERRED_CONSTRAINT ? 1 : 0,
        c == Case.DEFERRED_CONSTRAINT ? config.workers() : 0,
        run.commitFailures(),
        counting.acquisitions.get(),
        handlerCalls.get());
    assertThat(effects).as("hostile effects committed").isZero();
    assertThat(run.lines()).as("log lines of the hostile run").isLessThanOrEqualTo(MAX_LOG_LINES);
    assertThat(idleInTx).as("transactions left open").isZero();
  }

  /**
   * The deferred-constraint case on the command queue with 4 workers and batch size 1, where the
   * worker whose commit failed hears of it {@link #LATE} after the server rolled its transaction
   * back (its thread held up, as a loaded machine may do for a few milliseconds): the other workers
   * take the command meanwhile and their commits fail as well. Still parked after exactly {@value
   * #MAX_FAILURES} counted failures, with no more failed commits than workers and one acquisition
   * more per failed commit at most.
   */
  @Test
  void commitFailuresSeenLateCostOneAcquisitionEach(TestDatabase db) throws Exception {
    int n = 200;
    Config config = new Config(4, 1);
    CommandsRig rig = new CommandsRig(db.dataSource());
    Ledger ledger = Ledger.install(db.dataSource());
    reset(rig, ledger, db);
    String hostileId = rig.hostile(Case.DEFERRED_CONSTRAINT);
    rig.good(ledger, n);
    AtomicInteger handlerCalls = new AtomicInteger();
    CountingDriver counting =
        new CountingDriver(rig.driver(handlerCalls, Case.DEFERRED_CONSTRAINT));
    counting.hostileId(hostileId);
    Run run;
    try (ErrLines err = new ErrLines()) {
      run = drain(lateCommitErrors(db.dataSource()), rig, ledger, counting, config, n, true);
      run = run.withLines(err.lines(), err.pumpLines(), err.warnOrError(), err.commitFailures());
    }
    Rig.Parked parked = rig.parked();
    Ledger.Figures f = ledger.figures();
    ChaosReport.of("10-hostile-commands-deferred-constraint-late-commit-error")
        .put("config", config.label())
        .put("good", n)
        .put("lateMs", LATE)
        .put(f)
        .put("hostileFailures", parked.failures())
        .put("hostileAcquisitions", counting.acquisitions.get())
        .put("hostileHandlerCalls", handlerCalls.get())
        .put("commitFailures", run.commitFailures())
        .put("logLines", run.lines())
        .write();

    assertThat(run.stalled())
        .as("the run stalled (nothing moved for %s): %s", STALL, run.progress())
        .isFalse();
    assertThat(f.handled()).as("good messages handled").isEqualTo(n);
    assertThat(f.duplicates()).as("good messages handled twice").isZero();
    assertThat(parked.parked()).as("hostile delivery parked").isTrue();
    assertThat(parked.failures()).as("hostile delivery's counted failures").isEqualTo(MAX_FAILURES);
    assertThat(parked.parkedTotal()).as("parked deliveries (the hostile one only)").isOne();
    assertAcquisitions(
        1, config.workers(), run.commitFailures(), counting.acquisitions.get(), handlerCalls.get());
    assertThat(db.queryLong("SELECT count(*) FROM hostile.effects"))
        .as("hostile effects committed")
        .isZero();
    assertThat(idleInTransaction(db)).as("transactions left open").isZero();
  }

  /** How long a worker whose commit failed waits before it sees the error, in the test above. */
  static final Duration LATE = Duration.ofMillis(300);

  /**
   * {@code ds}, whose connections hold a failed commit's error back for {@link #LATE} before
   * throwing it: the server has ended the transaction and released its locks meanwhile.
   */
  private static DataSource lateCommitErrors(DataSource ds) {
    return (DataSource)
        Proxy.newProxyInstance(
            DataSource.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              Object result = invoke(ds, method, args);
              if (!(result instanceof Connection real)) {
                return result;
              }
              return Proxy.newProxyInstance(
                  Connection.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (p, m, a) -> {
                    try {
                      return invoke(real, m, a);
                    } catch (SQLException e) {
                      if (m.getName().equals("commit")) {
                        Thread.sleep(LATE.toMillis());
                      }
                      throw e;
                    }
                  });
            });
  }

  private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /**
   * The acquisitions and handler calls a hostile delivery may cost: {@value #MAX_FAILURES} (each
   * one a counted failure) plus one per failed commit.
   *
   * <p>Why one per failed commit: the server ends the transaction of a commit that fails (a
   * deferred constraint) and releases its row locks before the worker that committed has the error.
   * In that gap another worker may acquire the same delivery and run its handler before the pump
   * checks deferred constraints per delivery (the worker whose commit failed switches that check on
   * once it has the error), so that attempt's commit fails too. A failed commit is followed by
   * counting the failure in a fresh transaction, which locks the delivery again ({@code SKIP
   * LOCKED}): that is either a second acquisition with a counted failure, or nothing when another
   * worker holds the delivery (whose attempt is counted instead). Either way a failed commit costs
   * one acquisition that counts nothing, and one handler call at most. And at most one commit per
   * worker fails so: a worker whose commit failed has switched the check on before it polls again.
   */
  private static void assertAcquisitions(
      int minCommitFailures,
      int maxCommitFailures,
      int commitFailures,
      int acquisitions,
      int handlerCalls) {
    assertThat(commitFailures).as("failed commits").isBetween(minCommitFailures, maxCommitFailures);
    assertThat(acquisitions)
        .as("hostile acquisitions (%s failed commits)", commitFailures)
        .isLessThanOrEqualTo(MAX_FAILURES + commitFailures);
    assertThat(handlerCalls)
        .as("hostile handler calls (%s failed commits)", commitFailures)
        .isLessThanOrEqualTo(MAX_FAILURES + commitFailures);
  }

  /**
   * The time a clean run of {@code n} takes (after one warm-up run), once per driver and config.
   */
  private static double clean(Rig rig, Ledger ledger, TestDatabase db, int n, Config config)
      throws Exception {
    String key = rig.name() + "/" + config.label();
    Double known = CLEAN_SECONDS.get(key);
    if (known != null) {
      return known;
    }
    double best = Double.MAX_VALUE;
    for (int round = 0; round < 2; round++) {
      reset(rig, ledger, db);
      rig.good(ledger, n);
      Run r =
          drain(
              db.dataSource(),
              rig,
              ledger,
              rig.driver(new AtomicInteger(), Case.NUL_REASON),
              config,
              n,
              false);
      Ledger.Figures f = ledger.figures();
      assertThat(r.stalled()).as("clean run stalled: %s", r.progress()).isFalse();
      assertThat(f.exactlyOnce()).as("clean run exactly once: %s", f).isTrue();
      assertThat(f.handled()).isEqualTo(n);
      best = Math.min(best, r.seconds());
    }
    CLEAN_SECONDS.put(key, best);
    return best;
  }

  private static void reset(Rig rig, Ledger ledger, TestDatabase db) {
    rig.reset(db);
    ledger.reset();
    db.execute("TRUNCATE hostile.effects, hostile.once");
    db.execute("INSERT INTO hostile.once VALUES (1)");
  }

  /** What one run measured. */
  record Run(
      double seconds,
      boolean stalled,
      String progress,
      int errLines,
      int lines,
      int warnOrError,
      int commitFailures) {
    Run withLines(int all, int pump, int w, int commits) {
      return new Run(seconds, stalled, progress, all, pump, w, commits);
    }
  }

  /**
   * Runs a pump until the {@code n} good messages are handled (and, with {@code hostile}, the
   * hostile one is settled), or until nothing moved for {@link #STALL}; returns the time the good
   * messages took.
   */
  private static Run drain(
      DataSource ds, Rig rig, Ledger ledger, Driver driver, Config config, int n, boolean hostile)
      throws Exception {
    MessagePump pump =
        MessagePump.builder(ds)
            .name("hostile-" + rig.name())
            .driver(driver)
            .workers(config.workers())
            .batchSize(config.batchSize())
            .pollInterval(Duration.ofMillis(20))
            .backoff(Duration.ofMillis(5), Duration.ofMillis(50))
            .maxFailures(MAX_FAILURES)
            .shutdownGrace(Duration.ofSeconds(10))
            .build();
    long start = System.nanoTime();
    long goodDone = -1;
    boolean stalled = false;
    long handled = 0;
    long firstHandled = -1;
    pump.start();
    try {
      String lastState = "";
      long lastMove = System.nanoTime();
      while (true) {
        handled = ledger.figures().handled();
        if (firstHandled < 0 && handled > 0) {
          firstHandled = System.nanoTime();
        }
        boolean settled = !hostile || rig.hostileSettled();
        if (goodDone < 0 && handled >= n) {
          goodDone = System.nanoTime();
        }
        if (goodDone >= 0 && settled) {
          break;
        }
        String state = handled + "/" + rig.progress();
        long now = System.nanoTime();
        if (!state.equals(lastState)) {
          lastState = state;
          lastMove = now;
        } else if (now - lastMove > STALL.toNanos()) {
          stalled = true;
          break;
        }
        Thread.sleep(20);
      }
    } finally {
      pump.close();
    }
    long end = goodDone < 0 ? System.nanoTime() : goodDone;
    String progress =
        handled
            + " of "
            + n
            + " handled, the first "
            + (firstHandled < 0 ? "never" : round((firstHandled - start) / 1e9) + " s")
            + " after the pump started";
    return new Run((end - start) / 1e9, stalled, progress, 0, 0, 0, 0);
  }

  private static long idleInTransaction(TestDatabase db) {
    return db.queryLong(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            + " AND state LIKE 'idle in transaction%'");
  }

  private static double round(double d) {
    return Math.round(d * 100) / 100.0;
  }

  private static String abbreviate(String s) {
    return s.length() <= 160 ? s : s.substring(0, 160) + "...";
  }

  private static Rig rig(String driver, DataSource ds) {
    switch (driver) {
      case "commands":
        return new CommandsRig(ds);
      case "events":
        return new EventsRig(ds);
      default:
        return new BalancerRig(ds);
    }
  }

  /** One driver under test: its tables, its producer and its pump's driver. */
  abstract static class Rig {
    final DataSource ds;

    Rig(DataSource ds) {
      this.ds = ds;
    }

    /** How the hostile delivery ended up. */
    record Parked(boolean parked, long failures, long parkedTotal, String reason) {}

    abstract String name();

    abstract void reset(TestDatabase db);

    /** Stores the hostile message of case {@code c}; returns its delivery's message id. */
    abstract String hostile(Case c) throws SQLException;

    /** Stores {@code n} good messages and acknowledges them in the ledger. */
    abstract void good(Ledger ledger, int n) throws SQLException;

    /** A driver whose handler records good messages and lets the hostile one act out {@code c}. */
    abstract Driver driver(AtomicInteger hostileCalls, Case c);

    /** True once the hostile message is parked or gone. */
    abstract boolean hostileSettled() throws SQLException;

    /** A value that changes while the driver makes progress on the hostile message. */
    abstract String progress() throws SQLException;

    abstract Parked parked() throws SQLException;

    String queryText(String sql, Object... args) throws SQLException {
      try (Connection c = ds.getConnection();
          PreparedStatement ps = c.prepareStatement(sql)) {
        for (int i = 0; i < args.length; i++) {
          ps.setObject(i + 1, args[i]);
        }
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() ? rs.getString(1) : null;
        }
      }
    }

    Parked parkedRow(String sql, String totalSql, Object... args) throws SQLException {
      try (Connection c = ds.getConnection();
          PreparedStatement ps = c.prepareStatement(sql)) {
        for (int i = 0; i < args.length; i++) {
          ps.setObject(i + 1, args[i]);
        }
        long total = Long.parseLong(queryText(totalSql));
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return new Parked(false, -1, total, null);
          }
          return new Parked(rs.getBoolean(1), rs.getLong(2), total, rs.getString(3));
        }
      }
    }

    void update(String sql, Object... args) throws SQLException {
      try (Connection c = ds.getConnection();
          PreparedStatement ps = c.prepareStatement(sql)) {
        for (int i = 0; i < args.length; i++) {
          ps.setObject(i + 1, args[i]);
        }
        assertThat(ps.executeUpdate()).as(sql).isOne();
      }
    }
  }

  static final class CommandsRig extends Rig {
    private final CommandQueue queue;
    private String hostileId;

    CommandsRig(DataSource ds) {
      super(ds);
      this.queue = CommandQueue.create(ds, Work.CODEC);
    }

    @Override
    String name() {
      return "commands";
    }

    @Override
    void reset(TestDatabase db) {
      db.execute(
          "TRUNCATE commandqueue.commands, commandqueue.dead_letters,"
              + " commandqueue.idempotency_keys");
    }

    @Override
    String hostile(Case c) throws SQLException {
      hostileId =
          (c == Case.UNDECODABLE_NUL
                  ? queue.enqueueRaw(Work.TYPE, Hostile.UNDECODABLE_NUL, EnqueueOptions.defaults())
                  : queue.enqueue(new Work(Hostile.HOSTILE_N)))
              .messageId()
              .toString();
      if (c == Case.BAD_HEADERS) {
        update(
            "UPDATE commandqueue.commands SET headers = '{\"trace\":{\"id\":1}}'::jsonb"
                + " WHERE message_id = ?::uuid",
            hostileId);
      }
      return hostileId;
    }

    @Override
    void good(Ledger ledger, int n) {
      for (int i = 0; i < n; i += 1_000) {
        Chaos.enqueue(queue, ledger, i, Math.min(n, i + 1_000));
      }
    }

    @Override
    Driver driver(AtomicInteger hostileCalls, Case c) {
      return queue.driver(
          CommandHandlers.builder()
              .on(
                  Work.class,
                  (w, ctx) -> {
                    if (w.n() == Hostile.HOSTILE_N) {
                      hostileCalls.incrementAndGet();
                      c.act(ctx.tx());
                      return;
                    }
                    Ledger.record(
                        ctx.tx().connection(), ctx.messageId().toString(), ctx.attempt(), "h");
                  })
              .build());
    }

    @Override
    boolean hostileSettled() throws SQLException {
      return queryText("SELECT 1 FROM commandqueue.commands WHERE message_id = ?::uuid", hostileId)
          == null;
    }

    @Override
    String progress() throws SQLException {
      return queryText(
          "SELECT failures FROM commandqueue.commands WHERE message_id = ?::uuid", hostileId);
    }

    @Override
    Parked parked() throws SQLException {
      return parkedRow(
          "SELECT true, failures, last_error FROM commandqueue.dead_letters"
              + " WHERE message_id = ?::uuid",
          "SELECT count(*) FROM commandqueue.dead_letters",
          hostileId);
    }
  }

  static final class EventsRig extends Rig {
    static final String HANDLER_KEY = "hostile-events";
    private final EventStore store;
    private long hostileStream;

    EventsRig(DataSource ds) {
      super(ds);
      this.store = EventStore.create(ds, Work.CODEC);
    }

    @Override
    String name() {
      return "events";
    }

    @Override
    void reset(TestDatabase db) {
      db.execute(
          "TRUNCATE eventstream.handler_checkpoints, eventstream.stream_types,"
              + " eventstream.events, eventstream.streams");
    }

    @Override
    String hostile(Case c) throws SQLException {
      String id;
      try (Connection conn = ds.getConnection()) {
        conn.setAutoCommit(false);
        Tx tx = Tx.of(conn);
        hostileStream = store.createStream(tx);
        id =
            store
                .appendTo(tx, hostileStream, 0, List.of(new Work(Hostile.HOSTILE_N)))
                .messageIds()
                .get(0);
        conn.commit();
      }
      if (c == Case.UNDECODABLE_NUL) {
        // No raw append: the stored payload is replaced, as a faulty producer or tool would.
        update(
            "UPDATE eventstream.events SET payload = ? WHERE message_id = ?::uuid",
            Hostile.UNDECODABLE_NUL,
            id);
      }
      if (c == Case.BAD_HEADERS) {
        update(
            "UPDATE eventstream.events SET headers = '{\"trace\":[1]}'::jsonb"
                + " WHERE message_id = ?::uuid",
            id);
      }
      return id;
    }

    @Override
    void good(Ledger ledger, int n) throws SQLException {
      List<String> ids = new ArrayList<>();
      try (Connection conn = ds.getConnection()) {
        conn.setAutoCommit(false);
        Tx tx = Tx.of(conn);
        for (int i = 0; i < n; i += 10) {
          List<Work> events = new ArrayList<>();
          for (int j = i; j < Math.min(n, i + 10); j++) {
            events.add(new Work(j));
          }
          long stream = store.createStream(tx);
          AppendResult r = store.appendTo(tx, stream, 0, events);
          ids.addAll(r.messageIds());
        }
        conn.commit();
      }
      ledger.acknowledge(ids);
    }

    @Override
    Driver driver(AtomicInteger hostileCalls, Case c) {
      return store.driver(
          HANDLER_KEY,
          EventHandlers.builder()
              .on(
                  Work.class,
                  (w, ctx) -> {
                    if (w.n() == Hostile.HOSTILE_N) {
                      hostileCalls.incrementAndGet();
                      c.act(ctx.tx());
                      return;
                    }
                    Ledger.record(
                        ctx.tx().connection(),
                        ctx.messageId(),
                        ctx.attempt(),
                        "h",
                        Long.toString(ctx.streamId()),
                        ctx.offset());
                  })
              .build());
    }

    @Override
    boolean hostileSettled() throws SQLException {
      return queryText(
              "SELECT 1 FROM eventstream.handler_checkpoints WHERE handler_key = ?"
                  + " AND stream_id = ? AND (parked_at IS NOT NULL OR checkpoint_offset > 0)",
              HANDLER_KEY,
              hostileStream)
          != null;
    }

    @Override
    String progress() throws SQLException {
      return queryText(
          "SELECT failures FROM eventstream.handler_checkpoints WHERE handler_key = ?"
              + " AND stream_id = ?",
          HANDLER_KEY,
          hostileStream);
    }

    @Override
    Parked parked() throws SQLException {
      return parkedRow(
          "SELECT parked_at IS NOT NULL AND checkpoint_offset = 0, failures, parked_reason"
              + " FROM eventstream.handler_checkpoints WHERE handler_key = ? AND stream_id = ?",
          "SELECT count(*) FROM eventstream.handler_checkpoints WHERE parked_at IS NOT NULL",
          HANDLER_KEY,
          hostileStream);
    }
  }

  static final class BalancerRig extends Rig {
    static final String GROUP = "hostile";
    static final String HOSTILE_KEY = "hostile-key";
    private final MessageBalancer balancer;

    BalancerRig(DataSource ds) {
      super(ds);
      this.balancer = MessageBalancer.create(ds, GROUP);
    }

    @Override
    String name() {
      return "balancer";
    }

    @Override
    void reset(TestDatabase db) {
      db.execute("TRUNCATE balancer.messages, balancer.partitions");
    }

    @Override
    String hostile(Case c) {
      byte[] content =
          c == Case.UNDECODABLE_NUL
              ? Hostile.UNDECODABLE_NUL
              : Work.CODEC.encode(new Work(Hostile.HOSTILE_N));
      return Long.toString(balancer.storeMessage(HOSTILE_KEY, content));
    }

    @Override
    void good(Ledger ledger, int n) throws SQLException {
      List<String> ids = new ArrayList<>();
      try (Connection conn = ds.getConnection()) {
        conn.setAutoCommit(false);
        for (int i = 0; i < n; i++) {
          ids.add(
              "b"
                  + balancer.storeMessage(
                      conn, "k" + (i % 20), Work.CODEC.encode(new Work(i)), null));
        }
        conn.commit();
      }
      ledger.acknowledge(ids);
    }

    @Override
    Driver driver(AtomicInteger hostileCalls, Case c) {
      return balancer.driver(
          BalancedHandlers.builder()
              .on(
                  (m, ctx) -> {
                    Tx tx = ctx.tx();
                    if (m.partitionKey().equals(HOSTILE_KEY)) {
                      hostileCalls.incrementAndGet();
                    }
                    // The balancer stores bytes: decoding is the handler's (case 2 fails here).
                    Work w = (Work) Work.CODEC.decode(Work.TYPE, m.content());
                    if (w.n() == Hostile.HOSTILE_N) {
                      c.act(tx);
                      return Result.ok();
                    }
                    Ledger.record(
                        tx.connection(), "b" + m.id(), 1 + m.failures(), "h", m.partitionKey(), -1);
                    return Result.ok();
                  })
              .build());
    }

    @Override
    boolean hostileSettled() throws SQLException {
      return queryText(
              "SELECT 1 FROM balancer.partitions WHERE partition_group = ?"
                  + " AND partition_key = ? AND parked_at IS NULL",
              GROUP,
              HOSTILE_KEY)
          == null;
    }

    @Override
    String progress() throws SQLException {
      return queryText(
          "SELECT failures FROM balancer.partitions WHERE partition_group = ?"
              + " AND partition_key = ?",
          GROUP,
          HOSTILE_KEY);
    }

    @Override
    Parked parked() throws SQLException {
      return parkedRow(
          "SELECT parked_at IS NOT NULL, failures, parked_reason FROM balancer.partitions"
              + " WHERE partition_group = ? AND partition_key = ?",
          "SELECT count(*) FROM balancer.partitions WHERE parked_at IS NOT NULL",
          GROUP,
          HOSTILE_KEY);
    }
  }
}
