package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandOperations;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.PostgresExtension;

/**
 * However many clients poll, the database sees one round of sampling queries per interval: every
 * statement the console sends goes through a counting data source (a real connection pool below,
 * counted, not mocked), and 20 concurrent clients polling {@code api/overview} cost the queries of
 * one round per interval. Closing the server stops the sampling thread.
 */
@ExtendWith(PostgresExtension.class)
class ConsoleSamplingIT {

  private static final Duration INTERVAL = Duration.ofSeconds(3);
  private static final int CLIENTS = 20;
  private static final Set<String> STATEMENTS =
      Set.of("prepareStatement", "createStatement", "prepareCall");

  /** Counts the statements made on the connections of {@code ds}. */
  private static DataSource counting(DataSource ds, AtomicLong statements) {
    return (DataSource)
        Proxy.newProxyInstance(
            ConsoleSamplingIT.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              Object result = invoke(ds, method, args);
              if (result instanceof Connection c) {
                return Proxy.newProxyInstance(
                    ConsoleSamplingIT.class.getClassLoader(),
                    new Class<?>[] {Connection.class},
                    (p, m, a) -> {
                      if (STATEMENTS.contains(m.getName())) {
                        statements.incrementAndGet();
                      }
                      return invoke(c, m, a);
                    });
              }
              return result;
            });
  }

  private static Object invoke(Object target, java.lang.reflect.Method m, Object[] args)
      throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void concurrentClientsShareOneRoundOfQueriesPerInterval(DataSource ds) throws Exception {
    CommandOperations.of(ds).migrate();
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    EventStore store = EventStore.create(ds, JsonMessageCodec.of(MessageTypes.builder().build()));
    long stream = Transactions.inNew(ds, "creating a stream", tx -> store.createStream(tx));
    store.operations().setCheckpoint("projection", stream, 0, 0);

    long samplersBefore = samplers();
    AtomicLong statements = new AtomicLong();
    ConsoleConfig config = ConsoleConfig.builder().sampleInterval(INTERVAL).build();
    ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
    try (ConsoleServer server =
        ConsoleServer.start(counting(ds, statements), config, "127.0.0.1", 0)) {
      Http first = new Http(server.uri());
      long start = System.nanoTime();
      long before = statements.get();
      assertThat(first.get("api/overview").body()).contains("\"ev.projection.lag\"");
      long round = statements.get() - before;
      assertThat(round).as("statements of one round").isPositive();

      // Each client polls as fast as it can, 10 times: 200 requests.
      List<Future<Integer>> polls = new ArrayList<>();
      for (int i = 0; i < CLIENTS; i++) {
        polls.add(
            clients.submit(
                () -> {
                  Http h = new Http(server.uri());
                  int ok = 0;
                  for (int n = 0; n < 10; n++) {
                    HttpResponse<String> r = h.get("api/overview");
                    ok += r.statusCode() == 200 && r.body().contains("\"series\"") ? 1 : 0;
                  }
                  return ok;
                }));
      }
      for (Future<Integer> f : polls) {
        assertThat(f.get()).isEqualTo(10);
      }
      long elapsedMs = (System.nanoTime() - start) / 1_000_000;
      // A round the last polls started may still run: let it end (no poll starts another).
      await().atMost(Duration.ofSeconds(30)).until(() -> (statements.get() - before) % round == 0);
      long sent = statements.get() - before;
      assertThat(sent % round).as("whole rounds only").isZero();
      assertThat(sent / round)
          .as("rounds in %d ms at one per %s", elapsedMs, INTERVAL)
          .isBetween(1L, 1 + elapsedMs / INTERVAL.toMillis());

      // Once the snapshot is older than the interval, the next concurrent polls share one round.
      Thread.sleep(INTERVAL.toMillis() + 200);
      long again = statements.get();
      polls.clear();
      for (int i = 0; i < CLIENTS; i++) {
        polls.add(clients.submit(() -> new Http(server.uri()).get("api/overview").statusCode()));
      }
      for (Future<Integer> f : polls) {
        assertThat(f.get()).isEqualTo(200);
      }
      // They are served the snapshot they find; the one round they started runs meanwhile.
      await().atMost(Duration.ofSeconds(30)).until(() -> statements.get() - again >= round);
      Thread.sleep(500);
      assertThat(statements.get() - again).isEqualTo(round);
    } finally {
      clients.shutdownNow();
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> samplers() <= samplersBefore);
  }

  private static long samplers() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().equals("pump-console-sampler"))
        .count();
  }
}
