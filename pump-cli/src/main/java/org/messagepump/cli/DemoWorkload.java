package org.messagepump.cli;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerDriverOptions;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.Concurrency;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventDriverOptions;
import org.messagepump.eventstream.EventHandlers;

/**
 * The demo's moving parts: the four pumps (orders, read model, totals projection, notifications)
 * and the downstream gateway that confirms hand-offs. {@code pump demo} runs one batch of orders
 * through it; {@code pump console --demo} keeps placing orders in the background.
 */
final class DemoWorkload implements AutoCloseable {

  /** Failed attempts after which an order is parked as a dead letter. */
  static final int ORDER_MAX_FAILURES = 3;

  /** Failed attempts after which a notification key is parked. */
  static final int NOTIFY_MAX_FAILURES = 5;

  /** Failed attempts after which the read model parks a stream (console demo only). */
  static final int VIEW_MAX_FAILURES = 3;

  final DemoScenario scenario;
  final CommandQueue queue;
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final List<MessagePump> pumps = new ArrayList<>();
  private final Thread gateway;

  private DemoWorkload(DataSource ds, DemoScenario scenario, int workers) {
    this.scenario = scenario;
    this.queue = CommandQueue.builder(ds).codec(DemoScenario.CODEC).meterRegistry(registry).build();
    startPumps(ds, workers);
    this.gateway = startGateway(ds, scenario);
  }

  /** Starts the pumps and the gateway (the schemas must exist). */
  static DemoWorkload start(DataSource ds, DemoScenario scenario, int workers) {
    return new DemoWorkload(ds, scenario, workers);
  }

  List<MessagePump> pumps() {
    return pumps;
  }

  private void startPumps(DataSource ds, int workers) {
    CommandHandlers handlers =
        CommandHandlers.builder().on(DemoScenario.PlaceOrder.class, scenario::placeOrder).build();
    pumps.add(
        pump(ds, "orders", queue.driver(handlers), workers)
            .maxFailures(ORDER_MAX_FAILURES)
            .build());
    EventDriver view =
        scenario.events.driver(
            DemoScenario.VIEW_HANDLER,
            EventHandlers.builder().on(DemoScenario.OrderPlaced.class, scenario::project).build(),
            EventDriverOptions.defaults().withConcurrency(Concurrency.MAXIMAL));
    MessagePump.Builder viewPump = pump(ds, "orders-view", view, 2).batchSize(20);
    if (scenario.operatorFailures) {
      viewPump.maxFailures(VIEW_MAX_FAILURES);
    }
    pumps.add(viewPump.build());
    EventDriver totals =
        scenario.events.driver(
            DemoScenario.TOTALS_HANDLER,
            EventHandlers.builder()
                .project(DemoScenario.OrderPlaced.class, scenario::total)
                .build(),
            EventDriverOptions.defaults().withConcurrency(Concurrency.MINIMAL));
    pumps.add(pump(ds, "customer-totals", totals, 1).batchSize(50).build());
    pumps.add(
        pump(
                ds,
                "notifications",
                scenario.notifications.driver(
                    BalancedHandlers.builder().on(scenario::notify).build(),
                    BalancerDriverOptions.defaults().withLeaseDuration(Duration.ofSeconds(5))),
                workers)
            .maxFailures(NOTIFY_MAX_FAILURES)
            .build());
    pumps.forEach(MessagePump::start);
  }

  private MessagePump.Builder pump(
      DataSource ds, String name, org.messagepump.core.spi.Driver driver, int workers) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(workers)
        .pollInterval(Duration.ofMillis(100))
        .backoff(Duration.ofMillis(50), Duration.ofSeconds(1))
        .shutdownGrace(Duration.ofSeconds(5))
        .meterRegistry(registry);
  }

  /**
   * Places orders {@code from} .. {@code from + count - 1} in batches of 200, one round trip each.
   */
  void enqueue(int from, int count) {
    List<NewCommand> batch = new ArrayList<>();
    for (int i = from; i < from + count; i++) {
      batch.add(NewCommand.of(scenario.order(i)));
      if (batch.size() == 200 || i == from + count - 1) {
        queue.enqueueAll(batch);
        batch.clear();
      }
    }
    pumps.forEach(MessagePump::wake);
  }

  /** Stops the pumps (draining within their grace) and the gateway. */
  @Override
  public void close() {
    pumps.forEach(MessagePump::close);
    gateway.interrupt();
    try {
      gateway.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
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
                  LeaseResult r =
                      scenario.notifications.operations().confirm(c, h.messageId(), h.token());
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
