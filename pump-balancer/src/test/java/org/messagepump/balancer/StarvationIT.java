package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * A key with a backlog is not starved by keys that keep joining: one worker, key A with 100 waiting
 * messages, and new keys of one message each arriving at 1, 2 and 4 times the service rate measured
 * first. Between two of A's messages the pump serves only keys that could have been ready when A's
 * earlier message was served (whose store began before its handler ran), so at most as many as were
 * ready then. Keys served in the order they became ready put each new key behind A.
 */
@ExtendWith(PostgresExtension.class)
class StarvationIT {

  private static final int A_MESSAGES = 100;

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  /** Two seconds per rate. */
  @Test
  void aWaitingKeyIsServedBeforeKeysThatJoinAfterIt(TestDatabase db) throws Exception {
    check(db, "short", Duration.ofSeconds(2));
  }

  /** Ten seconds per rate. */
  @Test
  @Tag("chaos")
  void aWaitingKeyIsServedBeforeKeysThatJoinAfterItForTenSecondsPerRate(TestDatabase db)
      throws Exception {
    check(db, "long", Duration.ofSeconds(10));
  }

  private static void check(TestDatabase db, String name, Duration duration) throws Exception {
    double rate = serviceRate(db, name + "-rate");
    for (int times : new int[] {1, 2, 4}) {
      Figures f = starve(db, name + "-" + times, rate * times, duration);
      System.out.printf(
          "starvation %s: service rate %.0f/s, arrivals %dx: %d new keys (%.0f/s), %d deliveries,"
              + " A served %d times, largest gap %d with %d keys ready at A's earlier message,"
              + " most keys ready at one of A's messages %d%n",
          name,
          rate,
          times,
          f.arrivals,
          f.arrivals / (f.seconds),
          f.deliveries,
          f.aServed,
          f.largestGap,
          f.readyAtLargestGap,
          f.mostReady);
      assertThat(f.aServed).as("A served at %dx", times).isGreaterThanOrEqualTo(2);
      assertThat(f.overtakers).as("keys that joined after A's turn and overtook it").isEmpty();
      assertThat(f.largestGap).isLessThanOrEqualTo(f.readyAtLargestGap);
    }
  }

  /** What one run saw. */
  private record Figures(
      long arrivals,
      double seconds,
      int deliveries,
      int aServed,
      int largestGap,
      int readyAtLargestGap,
      int mostReady,
      List<String> overtakers) {}

  /** Deliveries per second of one worker draining 300 keys of one message each. */
  private static double serviceRate(TestDatabase db, String group) throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), group);
    int keys = 300;
    List<NewMessage> all = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      all.add(NewMessage.of("k" + i, bytes("x")));
    }
    b.storeMessages(all);
    List<Long> times = java.util.Collections.synchronizedList(new ArrayList<>());
    try (MessagePump pump =
        Pumps.pump(
            db.dataSource(),
            group,
            b.driver(
                BalancedHandlers.builder()
                    .on(
                        (m, ctx) -> {
                          times.add(System.nanoTime());
                          return Result.ok();
                        })
                    .build()),
            1)) {
      pump.start();
      await().atMost(Duration.ofMinutes(2)).until(() -> times.size() == keys);
    }
    return (keys - 1) / ((times.get(keys - 1) - times.get(0)) / 1e9);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Key A with {@value #A_MESSAGES} messages, then new keys at {@code perSecond} for {@code
   * duration} (or until A is done) while one worker serves them.
   */
  private static Figures starve(TestDatabase db, String group, double perSecond, Duration duration)
      throws Exception {
    MessageBalancer b = MessageBalancer.create(db.dataSource(), group);
    List<NewMessage> backlog = new ArrayList<>();
    for (int i = 0; i < A_MESSAGES; i++) {
      backlog.add(NewMessage.of("A", bytes("A" + i)));
    }
    b.storeMessages(backlog);
    // When the store of each new key began: it took its place in the rotation after that.
    Map<String, Long> storeBegan = new ConcurrentHashMap<>();
    // The deliveries in order, and when A's handler ran.
    List<String> served = java.util.Collections.synchronizedList(new ArrayList<>());
    Map<Integer, Long> aRan = new ConcurrentHashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    BalancedHandler handler =
        (m, ctx) -> {
          if (m.partitionKey().equals("A")) {
            aRan.put(served.size(), System.nanoTime());
            if (aRan.size() == A_MESSAGES) {
              stop.set(true);
            }
          }
          served.add(m.partitionKey());
          return Result.ok();
        };
    long arrivals = 0;
    long start;
    long end;
    try (var pool = db.newDataSource(group, 3);
        MessagePump pump =
            Pumps.pump(pool, group, b.driver(BalancedHandlers.builder().on(handler).build()), 1)) {
      pump.start();
      start = System.nanoTime();
      long until = start + duration.toNanos();
      while (!stop.get() && System.nanoTime() < until) {
        long due = (long) ((System.nanoTime() - start) / 1e9 * perSecond);
        if (due > arrivals) {
          List<NewMessage> batch = new ArrayList<>();
          for (long k = arrivals; k < due; k++) {
            batch.add(NewMessage.of("n" + k, bytes("x")));
          }
          long began = System.nanoTime();
          for (NewMessage n : batch) {
            storeBegan.put(n.partitionKey(), began);
          }
          b.storeMessages(batch);
          arrivals = due;
        } else {
          Thread.sleep(2); // pacing the producer, not waiting for a result
        }
      }
      end = System.nanoTime();
    }
    List<String> order;
    synchronized (served) {
      order = new ArrayList<>(served);
    }
    db.execute("DELETE FROM balancer.messages WHERE partition_group = '" + group + "'");
    db.execute("DELETE FROM balancer.partitions WHERE partition_group = '" + group + "'");
    // A's deliveries by position; between two of them, every key must have been possibly ready
    // at the earlier one (its store began before A's handler ran).
    List<Integer> aAt = new ArrayList<>();
    for (int i = 0; i < order.size(); i++) {
      if (order.get(i).equals("A")) {
        aAt.add(i);
      }
    }
    Map<String, Integer> servedAt = new HashMap<>();
    for (int i = 0; i < order.size(); i++) {
      servedAt.putIfAbsent(order.get(i), i);
    }
    int largestGap = -1;
    int readyAtLargestGap = 0;
    int mostReady = 0;
    List<String> overtakers = new ArrayList<>();
    for (int n = 1; n < aAt.size(); n++) {
      int from = aAt.get(n - 1);
      long ran = aRan.get(from);
      // Ready at A's earlier message: A, and the new keys whose store began before its handler ran
      // and that were not served before it.
      int ready = 1;
      for (Map.Entry<String, Long> e : storeBegan.entrySet()) {
        Integer at = servedAt.get(e.getKey());
        if (e.getValue() < ran && (at == null || at > from)) {
          ready++;
        }
      }
      mostReady = Math.max(mostReady, ready);
      for (int i = from + 1; i < aAt.get(n); i++) {
        Long began = storeBegan.get(order.get(i));
        if (began == null || began >= ran) {
          overtakers.add(
              order.get(i) + " between A's deliveries at " + from + " and " + aAt.get(n));
        }
      }
      int gap = aAt.get(n) - from - 1;
      if (gap > largestGap) {
        largestGap = gap;
        readyAtLargestGap = ready;
      }
    }
    return new Figures(
        arrivals,
        (end - start) / 1e9,
        order.size(),
        aAt.size(),
        largestGap,
        readyAtLargestGap,
        mostReady,
        overtakers.size() > 10 ? overtakers.subList(0, 10) : overtakers);
  }
}
