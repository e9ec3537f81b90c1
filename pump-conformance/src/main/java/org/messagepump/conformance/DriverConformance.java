package org.messagepump.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.BusyException;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.core.engine.PumpTester.Result;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The driver conformance kit: an abstract JUnit 5 suite that checks a {@link Driver} against the
 * pump's contract, through the pump's real path ({@link PumpTester}, and a real {@link MessagePump}
 * where concurrency matters) on a real PostgreSQL database ({@link PostgresExtension}).
 *
 * <p>A driver author extends it and supplies how to build the driver around a {@link Behaviour}
 * (the suite decides, per message and attempt, whether the handler succeeds, is busy or fails), how
 * to produce a message, how to count what is left and what is parked, and what the driver claims
 * ({@link #parks()}, {@link #orderedPerKey()}):
 *
 * <pre>{@code
 * class MyDriverConformanceIT extends DriverConformance {
 *   protected void prepare(TestDatabase db) { db.execute("TRUNCATE my_queue"); }
 *   protected Driver driver(TestDatabase db, Behaviour b) {
 *     return new MyDriver(db.dataSource(), (msg, ctx) -> b.run(ctx.messageId(), ctx.attempt()));
 *   }
 *   protected String produce(TestDatabase db, String key) { return myQueue.send(key, "x"); }
 *   protected long remaining(TestDatabase db) { return db.queryLong("SELECT count(*) FROM my_queue"); }
 *   protected long parked(TestDatabase db) { return db.queryLong("SELECT count(*) FROM my_parked"); }
 *   protected boolean parks() { return true; }
 *   protected boolean orderedPerKey() { return false; }
 * }
 * }</pre>
 *
 * <p>The message ids the suite sees are those of {@link Delivery#messageId()}: {@link #produce}
 * returns them, and the handler passes the same id to the {@link Behaviour}. Every test starts with
 * {@link #prepare}, which must leave the driver's store empty (or use a fresh schema, group or
 * table). All the suite's databases belong to the test class (one per class).
 *
 * <p>The checks are public test methods: a driver that knowingly fails one overrides it with
 * {@code @Test @Disabled("why")}, which keeps the reason visible in every report.
 */
@ExtendWith(PostgresExtension.class)
public abstract class DriverConformance {

  /** What the handler does with one delivery, as the suite decides it. */
  public enum Verdict {
    /** Succeed: return normally (or the driver's "ok" result). */
    HANDLE,
    /** The target is temporarily unavailable: throw {@link BusyException} (or return "busy"). */
    BUSY,
    /** Fail: throw {@link PlannedFailure} (or return "failed"). */
    FAIL;

    /**
     * Acts the verdict out in a handler that returns normally or throws: returns for {@link
     * #HANDLE}, throws {@link BusyException} for {@link #BUSY} and {@link PlannedFailure} for
     * {@link #FAIL}.
     */
    public void perform(String messageId) throws Exception {
      switch (this) {
        case HANDLE -> {}
        case BUSY -> throw new BusyException("conformance: " + messageId + " is busy");
        case FAIL -> throw new PlannedFailure(messageId);
      }
    }

    /** The verdict as a driver-level {@link Outcome} (for drivers whose handlers return one). */
    public Outcome outcome(String messageId) {
      return switch (this) {
        case HANDLE -> Outcome.HANDLED;
        case BUSY -> Outcome.busy("conformance: " + messageId + " is busy");
        case FAIL -> Outcome.failed(new PlannedFailure(messageId));
      };
    }
  }

  /** The failure a handler throws (or reports) for {@link Verdict#FAIL}. */
  public static final class PlannedFailure extends Exception {
    private static final long serialVersionUID = 1L;

    /** A planned failure of {@code messageId}. */
    public PlannedFailure(String messageId) {
      super("conformance: planned failure of " + messageId);
    }
  }

  /**
   * The suite's side of the handler: the driver's handler calls it with the delivery's message id
   * and attempt (1 the first time, failures + 1 after) and does what it answers.
   */
  @FunctionalInterface
  public interface Behaviour {

    /** What to do with this delivery. May block (the suite holds a delivery open this way). */
    Verdict decide(String messageId, int attempt) throws Exception;

    /** Decides and {@link Verdict#perform performs}: for handlers that return or throw. */
    default void run(String messageId, int attempt) throws Exception {
      decide(messageId, attempt).perform(messageId);
    }
  }

  // ---------------------------------------------------------------- what the driver author gives

  /**
   * Called before every test: installs what the driver needs (idempotently) and leaves its store
   * empty, or switches to a fresh schema, group or table.
   */
  protected abstract void prepare(TestDatabase db) throws Exception;

  /**
   * A new driver whose handler asks {@code behaviour} what to do with each delivery. Called several
   * times per test (one driver per simulated worker or process); drivers of one test share the
   * store.
   */
  protected abstract Driver driver(TestDatabase db, Behaviour behaviour) throws Exception;

  /**
   * Stores one new message, due now, under {@code key} (a stream, partition key or the like; a
   * driver without keys ignores it), committed, and returns its message id as deliveries will carry
   * it. Messages of one key are produced in the order the suite calls this.
   */
  protected abstract String produce(TestDatabase db, String key) throws Exception;

  /** How many messages are still to be handled: due or postponed, not parked. */
  protected abstract long remaining(TestDatabase db) throws Exception;

  /** How many messages are parked (out of circulation after {@code maxFailures}). */
  protected abstract long parked(TestDatabase db) throws Exception;

  /** True when the driver parks deliveries (implements {@link Driver#park}). */
  protected abstract boolean parks();

  /**
   * True when the driver delivers the messages of one key in the order they were produced, never
   * handing a message over while an earlier one of its key is unhandled.
   */
  protected abstract boolean orderedPerKey();

  // ---------------------------------------------------------------- the suite

  private static final Duration FAST = Duration.ofMillis(20);
  private static final Duration PATIENCE = Duration.ofSeconds(60);
  private static final AtomicInteger SEQUENCE = new AtomicInteger();

  private TestDatabase db;

  @BeforeEach
  final void prepareConformanceTest(TestDatabase db) throws Exception {
    this.db = db;
    prepare(db);
  }

  /** The test class's database (set before each test). */
  protected final TestDatabase database() {
    return db;
  }

  @Test
  public void theDeliveriesOfABatchAreDistinct() throws Exception {
    List<String> ids = produceMany(10, 10);
    Recorder handler = new Recorder((id, attempt) -> Verdict.HANDLE);
    PumpTester tester = tester(db.dataSource(), driver(db, handler), 10, 5, FAST, FAST);

    List<Result> first = tester.runOnce();
    assertFalse(first.isEmpty(), "a poll found nothing although 10 messages are due");
    assertDistinct(first, "one batch");
    List<Result> all = new ArrayList<>(first);
    all.addAll(tester.drainUntilIdle());
    assertDistinct(all, "all batches of an undisturbed drain");
    assertEquals(
        Set.copyOf(ids), idSet(all), "the drain did not deliver exactly what was produced");
  }

  @Test
  public void aHandledDeliveryIsGoneExactlyOnce() throws Exception {
    List<String> ids = produceMany(6, 6);
    assertEquals(6, remaining(db), "remaining() after producing 6 messages");
    Recorder handler = new Recorder((id, attempt) -> Verdict.HANDLE);
    PumpTester tester = tester(db.dataSource(), driver(db, handler), 3, 5, FAST, FAST);

    List<Result> all = tester.drainUntilIdle();
    for (Result r : all) {
      assertEquals(Kind.HANDLED, r.kind(), () -> "delivery " + r.messageId() + ": " + r);
    }
    assertDistinct(all, "a drain");
    assertEquals(Set.copyOf(ids), idSet(all), "handled deliveries differ from the produced ones");
    assertEquals(ids.size(), handler.calls().size(), "the handler ran more than once per message");
    assertEquals(0, remaining(db), "handled messages are still counted as remaining");
    assertEquals(0, parked(db), "handled messages are counted as parked");
    assertTrue(tester.runOnce().isEmpty(), "a handled message was delivered again");
  }

  @Test
  public void aDeliveryLockedByOneWorkerIsSkippedByTheOthers() throws Exception {
    List<String> ids = produceMany(4, 4);
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicReference<String> held = new AtomicReference<>();
    Recorder holder =
        new Recorder(
            (id, attempt) -> {
              held.compareAndSet(null, id);
              inside.countDown();
              if (!release.await(PATIENCE.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("conformance: never released");
              }
              return Verdict.HANDLE;
            });
    Recorder other = new Recorder((id, attempt) -> Verdict.HANDLE);
    PumpTester first = tester(db.dataSource(), driver(db, holder), 1, 5, FAST, FAST);
    PumpTester second = tester(db.dataSource(), driver(db, other), 10, 5, FAST, FAST);

    ExecutorService worker = Executors.newSingleThreadExecutor();
    try {
      Future<List<Result>> holding = worker.submit(first::runOnce);
      assertTrue(
          inside.await(PATIENCE.toSeconds(), TimeUnit.SECONDS),
          "the first worker never reached its handler");
      // The first worker's transaction is open, its delivery locked: the second must not get it.
      List<Result> meanwhile = second.runOnce();
      assertFalse(
          idSet(meanwhile).contains(held.get()),
          "a second worker acquired " + held.get() + " while the first still held it");
      release.countDown();
      List<Result> heldResults = holding.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
      assertEquals(List.of(held.get()), idList(heldResults), "the first worker's batch");
      assertEquals(Kind.HANDLED, heldResults.get(0).kind(), "the held delivery's fate");

      List<Result> all = new ArrayList<>(heldResults);
      all.addAll(meanwhile);
      all.addAll(second.drainUntilIdle());
      assertDistinct(all, "two workers");
      assertEquals(Set.copyOf(ids), idSet(all), "two workers did not deliver exactly the messages");
      assertEquals(0, remaining(db), "remaining after both workers finished");
    } finally {
      release.countDown();
      worker.shutdownNow();
    }
  }

  @Test
  public void busyKeepsTheFailureCount() throws Exception {
    String id = produce(db, "k0");
    Recorder handler = Recorder.scripted(Verdict.FAIL, Verdict.BUSY, Verdict.HANDLE);
    Duration backoff = Duration.ofMillis(50);
    PumpTester tester = tester(db.dataSource(), driver(db, handler), 1, 10, backoff, backoff);

    Result failed = single(tester.runOnce(), id);
    assertEquals(Kind.FAILED, failed.kind(), "first attempt's fate");
    assertEquals(0, failed.delivery().failures(), "failures of a new delivery");
    Result busy = single(pollUntilDelivered(tester), id);
    assertEquals(Kind.BUSY, busy.kind(), "second attempt's fate");
    assertEquals(1, busy.delivery().failures(), "failures after one failure");
    Result handled = single(pollUntilDelivered(tester), id);
    assertEquals(Kind.HANDLED, handled.kind(), "third attempt's fate");
    assertEquals(1, handled.delivery().failures(), "Busy counted a failure");
    assertEquals(List.of(1, 2, 2), handler.attempts(), "attempts the handler saw");
    assertEquals(0, remaining(db), "remaining after the message was handled");
  }

  @Test
  public void failedCountsAFailureAndPostponesByTheDatabaseClock() throws Exception {
    String id = produce(db, "k0");
    Map<Integer, Long> clockAtAttempt = new ConcurrentHashMap<>();
    Recorder handler =
        new Recorder(
            (m, attempt) -> {
              clockAtAttempt.put(attempt, databaseMicros());
              return attempt == 1 ? Verdict.FAIL : Verdict.HANDLE;
            });
    Duration delay = Duration.ofSeconds(1); // base = cap: the Failed delay is exactly this
    PumpTester tester = tester(db.dataSource(), driver(db, handler), 1, 10, delay, delay);

    long before = databaseMicros();
    Result failed = single(tester.runOnce(), id);
    assertEquals(Kind.FAILED, failed.kind(), "fate of a delivery whose handler failed");
    assertTrue(
        causedBy(failed.cause(), PlannedFailure.class),
        () -> "the failure's cause is not the handler's: " + failed.cause());
    assertEquals(1, remaining(db), "a failed message must stay (postponed)");
    assertTrue(tester.runOnce().isEmpty(), "a failed delivery was due again at once");

    Result handled = single(pollUntilDelivered(tester), id);
    assertEquals(Kind.HANDLED, handled.kind(), "fate of the second attempt");
    assertEquals(1, handled.delivery().failures(), "Failed did not count one failure");
    assertEquals(List.of(1, 2), handler.attempts(), "attempts the handler saw");
    long waited = clockAtAttempt.get(2) - before;
    assertTrue(
        waited >= delay.toNanos() / 1_000,
        "due again after " + waited + " µs by the database clock, before its delay of " + delay);
  }

  @Test
  public void aDeliveryParksAfterMaxFailures() throws Exception {
    String id = produce(db, "k0");
    Recorder handler = new Recorder((m, attempt) -> Verdict.FAIL);
    int maxFailures = 3;
    PumpTester tester = tester(db.dataSource(), driver(db, handler), 1, maxFailures, FAST, FAST);

    List<Result> fates = new ArrayList<>();
    for (int i = 0; i < maxFailures; i++) {
      fates.add(single(pollUntilDelivered(tester), id));
    }
    for (int i = 0; i < maxFailures; i++) {
      assertEquals(i, fates.get(i).delivery().failures(), "failures at attempt " + (i + 1));
    }
    assertEquals(Kind.FAILED, fates.get(0).kind(), "fate of the first failure");
    assertEquals(Kind.FAILED, fates.get(1).kind(), "fate of the second failure");
    if (parks()) {
      assertEquals(Kind.PARKED, fates.get(2).kind(), "fate of the maxFailures-th failure");
      assertEquals(1, parked(db), "parked() after a delivery parked");
      assertEquals(0, remaining(db), "a parked message is still counted as remaining");
      Thread.sleep(FAST.toMillis() * 5);
      assertTrue(tester.runOnce().isEmpty(), "a parked delivery was delivered again");
    } else {
      assertEquals(Kind.FAILED, fates.get(2).kind(), "a driver that does not park parked");
      assertEquals(1, remaining(db), "a driver that cannot park lost the message");
      assertEquals(0, parked(db), "parked() of a driver that does not park");
    }
  }

  @Test
  public void aFailingCompletedReturnsTheWholeBatch() throws Exception {
    List<String> ids = produceMany(3, 3);
    Recorder handler = new Recorder((id, attempt) -> Verdict.HANDLE);
    Driver failing = new CompletedFails(driver(db, handler));
    PumpTester tester = tester(db.dataSource(), failing, 10, 10, FAST, FAST);

    List<Result> fates = tester.runOnce();
    assertFalse(fates.isEmpty(), "nothing was delivered");
    assertFalse(handler.calls().isEmpty(), "the handler never ran");
    for (Result r : fates) {
      assertFalse(
          r.kind() == Kind.HANDLED || r.kind() == Kind.PARKED,
          () -> "a delivery of a batch whose completed() failed ended " + r.kind());
    }
    assertEquals(3, remaining(db), "completed() failed, but messages are gone");
    assertEquals(0, parked(db), "completed() failed once, but messages are parked");

    Recorder again = new Recorder((id, attempt) -> Verdict.HANDLE);
    List<Result> later = drainUntilNoneRemain(driver(db, again));
    assertEquals(Set.copyOf(ids), handledIds(later), "the batch did not come back whole");
  }

  @Test
  public void anAbortedConnectionReturnsItsDeliveriesUncounted() throws Exception {
    List<String> ids = produceMany(3, 3);
    String application = "conformance-abort-" + SEQUENCE.incrementAndGet();
    DataSource abortable = db.newDataSource(application, 2);
    AtomicBoolean aborted = new AtomicBoolean();
    Recorder handler =
        new Recorder(
            (id, attempt) -> {
              if (aborted.compareAndSet(false, true)) {
                abortBackends(application); // the process "dies" mid-transaction
              }
              return Verdict.HANDLE;
            });
    PumpTester tester = tester(abortable, driver(db, handler), 10, 10, FAST, FAST);

    try {
      for (Result r : tester.runOnce()) {
        assertEquals(Kind.ABANDONED, r.kind(), () -> "fate on an aborted connection: " + r);
      }
    } catch (DatabaseException expected) {
      // the pump may also report the lost connection as a database error
    }
    assertTrue(aborted.get(), "the handler never ran");
    assertEquals(3, remaining(db), "the aborted transaction's messages are gone");
    assertEquals(0, parked(db), "an aborted connection parked messages");

    Recorder again = new Recorder((id, attempt) -> Verdict.HANDLE);
    List<Result> later = drainUntilNoneRemain(driver(db, again));
    assertEquals(Set.copyOf(ids), handledIds(later), "the deliveries did not all come back");
    for (Result r : later) {
      assertEquals(
          0, r.delivery().failures(), () -> "an aborted connection counted a failure: " + r);
    }
  }

  @Test
  public void theMessagesOfAKeyAreHandledInOrder() throws Exception {
    assumeTrue(orderedPerKey(), "the driver does not claim order per key");
    int keys = 3;
    int perKey = 5;
    Map<String, List<String>> produced = new LinkedHashMap<>();
    for (int i = 0; i < perKey; i++) {
      for (int k = 0; k < keys; k++) {
        produced.computeIfAbsent("k" + k, x -> new ArrayList<>()).add(produce(db, "k" + k));
      }
    }
    // The second message of k0 fails once: its successors must wait for it, not overtake it.
    String slow = produced.get("k0").get(1);
    Recorder handler =
        new Recorder(
            (id, attempt) -> {
              Thread.sleep(2);
              return id.equals(slow) && attempt == 1 ? Verdict.FAIL : Verdict.HANDLE;
            });
    runPump(driver(db, handler), 3, 2);

    List<String> handledOrder =
        handler.calls().stream()
            .filter(c -> c.verdict() == Verdict.HANDLE)
            .map(Call::messageId)
            .toList();
    for (Map.Entry<String, List<String>> key : produced.entrySet()) {
      List<String> expected = key.getValue();
      Set<String> seen = new HashSet<>();
      for (String id : handledOrder) {
        int at = expected.indexOf(id);
        if (at < 0) {
          continue;
        }
        if (at > 0 && !seen.contains(expected.get(at - 1))) {
          fail(
              "key "
                  + key.getKey()
                  + ": message #"
                  + (at + 1)
                  + " was handled before message #"
                  + at
                  + "; produced "
                  + expected
                  + ", handled "
                  + handledOrder);
        }
        seen.add(id);
      }
      assertEquals(Set.copyOf(expected), seen, "key " + key.getKey() + ": not all handled");
    }
  }

  @Test
  public void concurrentWorkersNeverHandleOneDeliveryAtOnce() throws Exception {
    List<String> ids = produceMany(40, 40);
    Recorder handler =
        new Recorder(
            (id, attempt) -> {
              Thread.sleep(3);
              return Verdict.HANDLE;
            });
    runPump(driver(db, handler), 4, 3);

    assertTrue(
        handler.overlaps().isEmpty(),
        "two workers handled the same delivery at once: " + handler.overlaps());
    Set<String> handled = handler.calls().stream().map(Call::messageId).collect(Collectors.toSet());
    assertEquals(Set.copyOf(ids), handled, "the pump did not handle exactly the messages");
    assertEquals(0, parked(db), "parked() after a clean run");
  }

  /**
   * A handler that ignores its timeout (swallows the interrupt, returns normally late) in two pumps
   * with their own pools: every run is counted before the delivery can run again, so no two runs of
   * one delivery overlap and a driver that parks sees exactly {@code maxFailures} runs.
   */
  @Test
  public void aTimedOutDeliveryNeverRunsTwiceAtOnceNorMoreThanMaxFailuresTimes() throws Exception {
    int maxFailures = 2;
    List<String> ids = produceMany(8, 8);
    Recorder handler =
        new Recorder(
            (id, attempt) -> {
              long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(800);
              for (long left; (left = until - System.nanoTime()) > 0; ) {
                try {
                  TimeUnit.NANOSECONDS.sleep(left);
                } catch (InterruptedException swallowed) {
                  // ignores its timeout
                }
              }
              return Verdict.HANDLE;
            });
    List<MessagePump> pumps = new ArrayList<>();
    try {
      for (int p = 0; p < 2; p++) {
        String name = "conformance-timeout-" + SEQUENCE.incrementAndGet();
        MessagePump pump =
            MessagePump.builder(db.newDataSource(name, 6))
                .name(name)
                .driver(driver(db, handler))
                .workers(4)
                .pollInterval(FAST)
                .backoff(Duration.ofMillis(10), Duration.ofMillis(20))
                .maxFailures(maxFailures)
                .handlerTimeout(Duration.ofMillis(400))
                .build();
        pumps.add(pump);
        pump.start();
      }
      long deadline = System.nanoTime() + PATIENCE.toNanos();
      while (parks() ? remaining(db) > 0 : !eachCalled(handler, ids, maxFailures)) {
        if (System.nanoTime() > deadline) {
          fail("timed-out deliveries still circulating after " + PATIENCE);
        }
        Thread.sleep(20);
      }
    } finally {
      pumps.forEach(MessagePump::close);
    }
    assertTrue(
        handler.overlaps().isEmpty(),
        "a timed-out delivery ran again while its first run went on: " + handler.overlaps());
    if (parks()) {
      assertEquals(ids.size(), parked(db), "parked() after every delivery timed out");
      Map<String, Long> runs =
          handler.calls().stream()
              .collect(Collectors.groupingBy(Call::messageId, Collectors.counting()));
      // At most: a timeout that fires before the driver's handler reaches the suite counts a
      // failure the suite does not see.
      for (String id : ids) {
        assertTrue(
            runs.getOrDefault(id, 0L) <= maxFailures,
            id + " ran " + runs.get(id) + " times with maxFailures " + maxFailures);
      }
    }
  }

  private static boolean eachCalled(Recorder handler, List<String> ids, int times) {
    Map<String, Long> runs =
        handler.calls().stream()
            .collect(Collectors.groupingBy(Call::messageId, Collectors.counting()));
    return ids.stream().allMatch(id -> runs.getOrDefault(id, 0L) >= times);
  }

  // ---------------------------------------------------------------- helpers

  /** One call of the handler: which message, which attempt, what the suite answered. */
  record Call(String messageId, int attempt, Verdict verdict) {}

  /** Records every call and detects two workers in one delivery's handler at once. */
  static final class Recorder implements Behaviour {
    private final Behaviour script;
    private final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
    private final List<String> overlaps = Collections.synchronizedList(new ArrayList<>());

    Recorder(Behaviour script) {
      this.script = script;
    }

    /** Answers the n-th call with the n-th verdict (the last one for ever after). */
    static Recorder scripted(Verdict... verdicts) {
      AtomicInteger n = new AtomicInteger();
      return new Recorder(
          (id, attempt) -> verdicts[Math.min(n.getAndIncrement(), verdicts.length - 1)]);
    }

    @Override
    public Verdict decide(String messageId, int attempt) throws Exception {
      if (!inFlight.add(messageId)) {
        overlaps.add(messageId);
      }
      try {
        Verdict v = script.decide(messageId, attempt);
        calls.add(new Call(messageId, attempt, v));
        return v;
      } finally {
        inFlight.remove(messageId);
      }
    }

    List<Call> calls() {
      synchronized (calls) {
        return List.copyOf(calls);
      }
    }

    List<Integer> attempts() {
      return calls().stream().map(Call::attempt).toList();
    }

    List<String> overlaps() {
      synchronized (overlaps) {
        return List.copyOf(overlaps);
      }
    }
  }

  /** Delegates everything, but its {@code completed} fails: the batch must come back whole. */
  static final class CompletedFails extends ForwardingDriver {
    CompletedFails(Driver d) {
      super(d);
    }

    @Override
    public void completed(Tx tx, List<Delivery> handled) throws SQLException {
      super.completed(tx, handled);
      throw new SQLException("conformance: completed() fails", "XX000");
    }
  }

  private List<String> produceMany(int n, int keys) throws Exception {
    List<String> ids = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      ids.add(produce(db, "k" + (i % keys)));
    }
    assertEquals(n, Set.copyOf(ids).size(), "produce() returned duplicate message ids");
    return ids;
  }

  private static PumpTester tester(
      DataSource ds, Driver driver, int batchSize, int maxFailures, Duration base, Duration cap) {
    return PumpTester.builder(ds, driver)
        .batchSize(batchSize)
        .maxFailures(maxFailures)
        .backoff(base, cap)
        .build();
  }

  /** Polls until a poll delivers something (a postponed delivery becomes due), or fails. */
  private static List<Result> pollUntilDelivered(PumpTester tester) throws InterruptedException {
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    while (System.nanoTime() < deadline) {
      List<Result> r = tester.runOnce();
      if (!r.isEmpty()) {
        return r;
      }
      Thread.sleep(10);
    }
    throw new AssertionError("nothing was delivered again within " + PATIENCE);
  }

  /** Polls with a fresh tester until {@link #remaining} is 0; returns every result. */
  private List<Result> drainUntilNoneRemain(Driver driver) throws Exception {
    PumpTester tester = tester(db.dataSource(), driver, 10, 10, FAST, FAST);
    List<Result> all = new ArrayList<>();
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    while (remaining(db) > 0) {
      if (System.nanoTime() > deadline) {
        fail("still " + remaining(db) + " messages remaining after " + PATIENCE + ": " + all);
      }
      List<Result> r = tester.runOnce();
      all.addAll(r);
      if (r.isEmpty()) {
        Thread.sleep(10);
      }
    }
    return all;
  }

  private void runPump(Driver driver, int workers, int batchSize) throws Exception {
    try (MessagePump pump =
        MessagePump.builder(db.dataSource())
            .name("conformance")
            .driver(driver)
            .workers(workers)
            .batchSize(batchSize)
            .pollInterval(FAST)
            .backoff(Duration.ofMillis(50), Duration.ofMillis(100))
            .maxFailures(10)
            .build()) {
      pump.start();
      long deadline = System.nanoTime() + PATIENCE.toNanos();
      while (remaining(db) > 0) {
        if (System.nanoTime() > deadline) {
          fail("a pump of " + workers + " workers left " + remaining(db) + " messages");
        }
        Thread.sleep(20);
      }
    }
  }

  /** Terminates the backends of {@code application} and waits until they are gone. */
  private void abortBackends(String application) throws InterruptedException {
    assertTrue(db.terminateBackends(application) > 0, "no backend to abort");
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    while (db.queryLong(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + application + "'")
        > 0) {
      if (System.nanoTime() > deadline) {
        fail("the aborted backend did not go away");
      }
      Thread.sleep(10);
    }
  }

  private long databaseMicros() {
    return db.queryLong("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint");
  }

  private static Result single(List<Result> results, String id) {
    assertEquals(List.of(id), idList(results), "expected exactly the one delivery");
    return results.get(0);
  }

  private static void assertDistinct(List<Result> results, String where) {
    List<String> ids = idList(results);
    assertEquals(ids.size(), Set.copyOf(ids).size(), () -> where + " delivered duplicates: " + ids);
  }

  private static List<String> idList(List<Result> results) {
    return results.stream().map(Result::messageId).toList();
  }

  private static Set<String> idSet(List<Result> results) {
    return results.stream().map(Result::messageId).collect(Collectors.toSet());
  }

  private static Set<String> handledIds(List<Result> results) {
    return results.stream()
        .filter(r -> r.kind() == Kind.HANDLED)
        .map(Result::messageId)
        .collect(Collectors.toSet());
  }

  private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }
}
