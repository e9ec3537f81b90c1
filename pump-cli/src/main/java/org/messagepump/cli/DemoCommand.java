package org.messagepump.cli;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.PrintWriter;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.messagepump.balancer.LeaseResult;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.MessagePump;
import org.messagepump.eventstream.Concurrency;
import org.messagepump.eventstream.EventDriver;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pump demo}: all three drivers in one process on an embedded PostgreSQL (or {@code
 * --jdbc-url}), with injected failures, a live progress line and checked invariants.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "Run orders through commands, event streams and the balancer with injected failures,",
      "then check that every order was projected once and per-customer order was kept."
    })
final class DemoCommand implements Callable<Integer> {

  @Mixin DatabaseOptions db;

  @Option(
      names = "--messages",
      defaultValue = "1000",
      description = "Orders to place (default ${DEFAULT-VALUE}).")
  int messages;

  @Option(
      names = "--workers",
      defaultValue = "4",
      description = "Workers of the command and balancer pumps (default ${DEFAULT-VALUE}).")
  int workers;

  @Option(
      names = "--timeout",
      defaultValue = "PT5M",
      description = "Give up after this long (ISO-8601, default ${DEFAULT-VALUE}).")
  Duration timeout;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (messages < 1 || messages > 1_000_000) {
      throw new CliException("--messages must be between 1 and 1000000: " + messages, 2);
    }
    if (workers < 1 || workers > 64) {
      throw new CliException("--workers must be between 1 and 64: " + workers, 2);
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try (Database database = Database.open(db, true, 2 * workers + 24, err)) {
      DataSource ds = database.dataSource();
      MigrateCommand.migrateAll(ds);
      DemoScenario.createSchema(ds);
      DemoScenario scenario = new DemoScenario(ds, messages);
      out.printf(
          "demo run %s on %s: %d orders from %d customers, %d workers%n",
          scenario.run, database.description(), messages, scenario.customers, workers);
      out.flush();
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      CommandQueue queue =
          CommandQueue.builder(ds).codec(DemoScenario.CODEC).meterRegistry(registry).build();
      long started = System.nanoTime();
      List<MessagePump> pumps = startPumps(ds, queue, scenario, registry);
      Thread gateway = startGateway(ds, scenario);
      DemoProgress progress =
          new DemoProgress(ds, scenario, queue, registry, out, System.console() != null);
      try {
        enqueue(queue, scenario);
        pumps.forEach(MessagePump::wake);
        boolean done = progress.awaitDone(timeout);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        pumps.forEach(MessagePump::close);
        gateway.interrupt();
        gateway.join(5_000);
        DemoChecks checks = DemoChecks.run(ds, scenario, progress.deadLettersAdded());
        progress.summary(tookMs, checks, done);
        if (!done) {
          err.println("pump: the demo did not finish within " + timeout);
          return 1;
        }
        return checks.allPassed() ? 0 : 1;
      } finally {
        pumps.forEach(MessagePump::close);
        gateway.interrupt();
      }
    }
  }

  private List<MessagePump> startPumps(
      DataSource ds, CommandQueue queue, DemoScenario scenario, SimpleMeterRegistry registry) {
    List<MessagePump> pumps = new ArrayList<>();
    CommandHandlers handlers =
        CommandHandlers.builder().on(DemoScenario.PlaceOrder.class, scenario::placeOrder).build();
    pumps.add(pump(ds, "orders", queue.driver(handlers), workers, registry).maxFailures(3).build());
    EventDriver view =
        EventDriver.builder(scenario.events)
            .handlerKey(DemoScenario.VIEW_HANDLER)
            .on(DemoScenario.OrderPlaced.class, scenario::project)
            .concurrency(Concurrency.MAXIMAL)
            .build();
    pumps.add(pump(ds, "orders-view", view, 2, registry).batchSize(20).build());
    EventDriver totals =
        EventDriver.builder(scenario.events)
            .handlerKey(DemoScenario.TOTALS_HANDLER)
            .project(DemoScenario.OrderPlaced.class, scenario::total)
            .concurrency(Concurrency.MINIMAL)
            .build();
    pumps.add(pump(ds, "customer-totals", totals, 1, registry).batchSize(50).build());
    pumps.add(
        pump(
                ds,
                "notifications",
                scenario
                    .notifications
                    .driver(scenario::notify)
                    .leaseDuration(Duration.ofSeconds(5))
                    .build(),
                workers,
                registry)
            .maxFailures(5)
            .build());
    pumps.forEach(MessagePump::start);
    return pumps;
  }

  private static MessagePump.Builder pump(
      DataSource ds,
      String name,
      org.messagepump.core.spi.Driver driver,
      int workers,
      SimpleMeterRegistry registry) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(workers)
        .pollInterval(Duration.ofMillis(100))
        .backoff(Duration.ofMillis(50), Duration.ofSeconds(1))
        .shutdownGrace(Duration.ofSeconds(5))
        .meterRegistry(registry);
  }

  /** Places the orders in batches of 200, one round trip each. */
  private static void enqueue(CommandQueue queue, DemoScenario scenario) {
    List<NewCommand> batch = new ArrayList<>();
    for (int i = 0; i < scenario.orders; i++) {
      batch.add(NewCommand.of(scenario.order(i)));
      if (batch.size() == 200 || i == scenario.orders - 1) {
        queue.enqueueAll(batch);
        batch.clear();
      }
    }
  }

  /** The downstream gateway: confirms each hand-off and records the notification atomically. */
  private static Thread startGateway(DataSource ds, DemoScenario scenario) {
    Thread t =
        new Thread(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                DemoScenario.HandedOff h;
                try {
                  h = scenario.gateway.take();
                  Thread.sleep(20); // the gateway's own latency
                } catch (InterruptedException e) {
                  return;
                }
                try (Connection c = ds.getConnection()) {
                  c.setAutoCommit(false);
                  LeaseResult r = scenario.notifications.confirm(c, h.messageId(), h.token());
                  if (r == LeaseResult.APPLIED) {
                    scenario.recordNotification(c, h.customer(), h.messageId(), "gateway");
                    c.commit();
                  } else {
                    c.rollback();
                    if (r == LeaseResult.UNKNOWN_MESSAGE && h.tries() < 50) {
                      // The hand-off's transaction may not have committed yet: ask again soon.
                      scenario.gateway.add(h.retried());
                    }
                    // A stale token: the lease expired and the message was handed off again.
                  }
                } catch (Exception e) {
                  // the lease expires and the message is handed off again
                }
              }
            },
            "demo-gateway");
    t.setDaemon(true);
    t.start();
    return t;
  }
}
