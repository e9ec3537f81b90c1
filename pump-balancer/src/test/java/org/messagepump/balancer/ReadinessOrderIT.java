package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;

/**
 * Keys are served in the order they became ready (docs/balancer.md, "Order"): the sequences of
 * balancer-core with one worker and lockPartition, and a model of that order checked against the
 * pump's real runner over random stores, results, hand-offs and confirms.
 */
@ExtendWith(PostgresExtension.class)
class ReadinessOrderIT {

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** A message's name as the tests store it: its key and its number, "a1". */
  private static String name(BalancedMessage m) {
    return new String(m.content(), StandardCharsets.UTF_8);
  }

  private static void store(MessageBalancer b, String... names) {
    for (String n : names) {
      b.storeMessage(n.substring(0, 1), bytes(n));
    }
  }

  private static final class Handled extends CopyOnWriteArrayList<String> {
    private final java.util.Set<String> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** True the first time {@code m} is delivered. */
    boolean first(BalancedMessage m) {
      return seen.add(name(m));
    }
  }

  /**
   * One worker of the pump's real runner over {@code b}, each delivery added to {@code handled}.
   */
  private static PumpTester recording(DataSource ds, MessageBalancer b, Handled handled) {
    return Pumps.tester(
        ds,
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      handled.add(name(m));
                      return Result.ok();
                    })
                .build()));
  }

  /** Store a1, a2, b1, c1; handle a1; store d1: a is ready again before d joins. */
  @Test
  void aKeyServedBeforeANewKeyJoinedIsServedBeforeIt(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "ok");
    store(b, "a1", "a2", "b1", "c1");
    Handled handled = new Handled();
    PumpTester tester = recording(ds, b, handled);
    assertThat(tester.runOnce()).hasSize(1);
    store(b, "d1");
    tester.drainUntilIdle();
    assertThat(handled).containsExactly("a1", "b1", "c1", "a2", "d1");
  }

  /**
   * Keys of another group join the rotation sequence during this group's lap: its order is as
   * before, and a key of its own that joins later in the lap is still seen. Store a1, a2, b1, b2,
   * c1, c2; handle a1; a key joins group "other"; handle b1; store d1: a2 b2 d1 c2 after c1.
   */
  @Test
  void keysJoiningAnotherGroupDoNotChangeTheOrder(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "own");
    MessageBalancer other = MessageBalancer.create(ds, "other");
    store(b, "a1", "a2", "b1", "b2", "c1", "c2");
    Handled handled = new Handled();
    PumpTester tester = recording(ds, b, handled);
    assertThat(tester.runOnce()).hasSize(1);
    store(other, "z1");
    long[] before = placeOf(ds, "own", "b");
    assertThat(tester.runOnce()).hasSize(1);
    // No key of its group joined: b's turn wrote nothing to its key row.
    assertThat(placeOf(ds, "own", "b")).containsExactly(before);
    store(b, "d1");
    tester.drainUntilIdle();
    assertThat(handled).containsExactly("a1", "b1", "c1", "a2", "b2", "d1", "c2");
    assertThat(b.operations().stats("other").messages()).isEqualTo(1);
  }

  /** The rotation of a key and its row's version (xmin), from the fixture's schema. */
  private static long[] placeOf(DataSource ds, String group, String key) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT rotation, xmin::text::bigint FROM balancer.partitions"
                    + " WHERE partition_group = ? AND partition_key = ?")) {
      ps.setString(1, group);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        return new long[] {rs.getLong(1), rs.getLong(2)};
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The same with a1 requeued: it goes to the back, before d. */
  @Test
  void aRequeuedKeyIsServedBeforeAKeyThatJoinedAfterIt(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "requeue");
    store(b, "a1", "a2", "b1", "c1");
    Handled handled = new Handled();
    PumpTester tester =
        Pumps.tester(
            ds,
            b.driver(
                BalancedHandlers.builder()
                    .on(
                        (m, ctx) -> {
                          boolean first = handled.first(m);
                          boolean requeue = first && name(m).equals("a1");
                          handled.add(name(m) + (requeue ? "(requeue)" : ""));
                          return requeue ? Result.requeue() : Result.ok();
                        })
                    .build()));
    assertThat(tester.runOnce()).hasSize(1);
    store(b, "d1");
    tester.drainUntilIdle();
    assertThat(handled).containsExactly("a1(requeue)", "b1", "c1", "a1", "d1", "a2");
  }

  /**
   * The same with a1 failing: the key is postponed, and while its backoff lasts b1, c1 and d1 are
   * served. (A key whose backoff ends sooner is served in its turn, before d.)
   */
  @Test
  void aFailedKeyIsServedOnceItsBackoffEnds(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "failed");
    store(b, "a1", "a2", "b1", "c1");
    Handled handled = new Handled();
    AtomicReference<PartitionStats> aAfterC1 = new AtomicReference<>();
    // A backoff far longer than three deliveries take, checked below: the scenario is a key that
    // is still in backoff when b1, c1 and d1 are served.
    Duration backoff = Duration.ofSeconds(5);
    PumpTester tester =
        PumpTester.builder(
                ds,
                b.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              boolean first = handled.first(m);
                              boolean fail = first && name(m).equals("a1");
                              handled.add(name(m) + (fail ? "(failed)" : ""));
                              if (name(m).equals("c1")) {
                                aAfterC1.set(
                                    b.operations().partitionStats(b.group(), "a").orElseThrow());
                              }
                              if (fail) {
                                throw new IllegalStateException("a1 fails once");
                              }
                              return Result.ok();
                            })
                        .build()))
            .batchSize(1)
            .backoff(backoff, backoff)
            .build();
    assertThat(tester.runOnce())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.FAILED);
    store(b, "d1");
    tester.drainUntilIdle();
    assertThat(handled).containsExactly("a1(failed)", "b1", "c1", "d1");
    assertThat(aAfterC1.get().resumeAt()).as("a's backoff lasted while c1 was served").isNotNull();
    await().atMost(backoff.multipliedBy(6)).until(() -> !tester.drainUntilIdle().isEmpty());
    assertThat(handled).containsExactly("a1(failed)", "b1", "c1", "d1", "a1", "a2");
  }

  /**
   * Across a lap: a key served after another key joined goes behind it. Store a1, a2, b1, b2, c1;
   * handle a1; store d1: a2 (ready before d joined), d1, then b2 (ready again after d joined).
   */
  @Test
  void aKeyServedAfterANewKeyJoinedIsServedAfterIt(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "lap");
    store(b, "a1", "a2", "b1", "b2", "c1");
    Handled handled = new Handled();
    PumpTester tester = recording(ds, b, handled);
    assertThat(tester.runOnce()).hasSize(1);
    store(b, "d1");
    tester.drainUntilIdle();
    assertThat(handled).containsExactly("a1", "b1", "c1", "a2", "d1", "b2");
  }

  /**
   * A hand-off's end: a key whose lease is confirmed with messages left is ready from then on,
   * behind the keys waiting then and before a key that joins after.
   */
  @Test
  void aKeyIsReadyAgainWhenItsHandOffEnds(DataSource ds) {
    MessageBalancer b = MessageBalancer.create(ds, "handoff");
    store(b, "a1", "a2", "b1", "c1", "e1");
    Handled handled = new Handled();
    AtomicReference<BalancedMessage> handedOff = new AtomicReference<>();
    PumpTester tester =
        Pumps.tester(
            ds,
            b.driver(
                BalancedHandlers.builder()
                    .on(
                        (m, ctx) -> {
                          handled.add(name(m));
                          if (name(m).equals("a1")) {
                            handedOff.set(m);
                            return Result.handoff();
                          }
                          return Result.ok();
                        })
                    .build()));
    assertThat(tester.runOnce()).hasSize(1); // a1, handed off: a is blocked
    assertThat(tester.runOnce()).hasSize(1); // b1
    BalancedMessage a1 = handedOff.get();
    assertThat(b.operations().confirm(a1.id(), a1.handoffToken())).isEqualTo(LeaseResult.APPLIED);
    store(b, "d1");
    tester.drainUntilIdle();
    assertThat(handled).containsExactly("a1", "b1", "c1", "e1", "a2", "d1");
  }

  /**
   * The order as a model: the ready keys in a queue, a served key to its back, a key that joins to
   * its back, a Busy key keeps its place at the front, a handed-off key leaves the queue until its
   * lease ends; checked delivery by delivery against one worker of the pump's real runner, over
   * random stores (into waiting keys and new ones), results, hand-offs and their ends.
   */
  @Test
  void keysAreServedInTheOrderTheyBecameReady(DataSource ds) {
    for (long seed : new long[] {1, 2, 3}) {
      checkAgainstTheModel(ds, seed, 150);
    }
  }

  private static void checkAgainstTheModel(DataSource ds, long seed, int steps) {
    Random random = new Random(seed);
    MessageBalancer b = MessageBalancer.create(ds, "model-" + seed);
    Model model = new Model();
    // What the handler answers to its next delivery, chosen by the test before each poll.
    AtomicReference<String> answer = new AtomicReference<>("ok");
    List<BalancedMessage> leases = new ArrayList<>();
    Handled handled = new Handled();
    PumpTester tester =
        Pumps.tester(
            ds,
            b.driver(
                BalancedHandlers.builder()
                    .on(
                        (m, ctx) -> {
                          handled.add(name(m));
                          switch (answer.get()) {
                            case "requeue":
                              return Result.requeue();
                            case "busy":
                              throw new BusyException("the model says so");
                            case "failed":
                              throw new IllegalStateException("the model says so");
                            case "handoff":
                              leases.add(m);
                              return Result.handoff();
                            default:
                              return Result.ok();
                          }
                        })
                    .build()));
    int keys = 0;
    for (int step = 0; step < steps; step++) {
      int op = random.nextInt(10);
      if (op < 3) {
        // A message into a new key, or into one that has messages (waiting or handed off).
        String key =
            keys == 0 || random.nextInt(3) == 0 ? "k" + keys++ : "k" + random.nextInt(keys);
        String n = key + "." + step;
        b.storeMessage(key, bytes(n));
        model.store(key, n);
      } else if (op < 4 && !leases.isEmpty()) {
        BalancedMessage lease = leases.remove(random.nextInt(leases.size()));
        if (random.nextBoolean()) {
          assertThat(b.operations().confirm(lease.id(), lease.handoffToken()))
              .isEqualTo(LeaseResult.APPLIED);
          model.endLease(lease.partitionKey(), true);
        } else {
          assertThat(b.operations().requeue(lease.id(), lease.handoffToken()))
              .isEqualTo(LeaseResult.APPLIED);
          model.endLease(lease.partitionKey(), false);
        }
      } else {
        String[] answers = {"ok", "ok", "ok", "ok", "requeue", "busy", "failed", "handoff"};
        String a = answers[random.nextInt(answers.length)];
        answer.set(a);
        String expected = model.next();
        List<PumpTester.Result> r = tester.runOnce();
        if (expected == null) {
          assertThat(r).as("seed %d step %d: nothing is ready", seed, step).isEmpty();
          continue;
        }
        assertThat(r).as("seed %d step %d", seed, step).hasSize(1);
        assertThat(handled.get(handled.size() - 1))
            .as("seed %d step %d: the model's order %s", seed, step, model.queue)
            .isEqualTo(expected);
        model.served(a);
      }
    }
  }

  /** The order of ready keys as balancer-core keeps it, with the pump's outcomes. */
  private static final class Model {
    final Deque<String> queue = new ArrayDeque<>();
    final Map<String, Deque<String>> messages = new LinkedHashMap<>();
    final Map<String, Boolean> leased = new HashMap<>();

    void store(String key, String message) {
      Deque<String> m = messages.computeIfAbsent(key, k -> new ArrayDeque<>());
      if (m.isEmpty() && !leased.getOrDefault(key, false)) {
        queue.addLast(key); // joins at the back
      }
      m.addLast(message);
    }

    /** The message served next, or null when no key is ready. */
    String next() {
      return queue.isEmpty() ? null : messages.get(queue.peekFirst()).peekFirst();
    }

    void served(String answer) {
      String key = queue.pollFirst();
      Deque<String> m = messages.get(key);
      switch (answer) {
        case "busy":
          queue.addFirst(key); // keeps its place
          return;
        case "handoff":
          leased.put(key, true); // leaves the queue until its lease ends
          return;
        case "ok":
          m.pollFirst();
          break;
        default: // requeue, failed (the backoff of this test ends at once)
          break;
      }
      if (!m.isEmpty()) {
        queue.addLast(key);
      }
    }

    void endLease(String key, boolean confirmed) {
      leased.put(key, false);
      Deque<String> m = messages.get(key);
      if (confirmed) {
        m.pollFirst();
      }
      if (!m.isEmpty()) {
        queue.addLast(key); // ready from the end of its lease
      }
    }
  }
}
