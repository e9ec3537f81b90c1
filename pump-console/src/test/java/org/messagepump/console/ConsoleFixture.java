package org.messagepump.console;

import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Tx;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;

/**
 * A small operations scene on a real database: charges (commands) of which some are declined until
 * {@link #heal()}, a ledger (event handler) with one poisoned stream that parks, and mail (a
 * balancer group) with one key that parks. Optional background traffic moves the charts.
 */
final class ConsoleFixture implements AutoCloseable {

  record Charge(int n, String customer, long cents) {}

  record Charged(int n, long cents) {}

  static final String CHARGE = "ops.Charge";
  static final String LEDGER = "ops-ledger";
  static final String MAIL = "ops-mail";
  static final String BAD_KEY = "customer-13";

  /** Keys starting with this fail like {@link #BAD_KEY} (for hostile keys the tests store). */
  static final String FAILING_PREFIX = "failing:";

  static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(
          MessageTypes.builder()
              .register(Charge.class, CHARGE)
              .register(Charged.class, "ops.Charged")
              .build());

  final DataSource ds;
  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final CommandQueue queue;
  final EventStore events;
  final MessageBalancer mail;
  final AtomicBoolean healed = new AtomicBoolean();
  final AtomicInteger handledCharges = new AtomicInteger();
  private final List<MessagePump> pumps = new ArrayList<>();
  private volatile Thread traffic;
  private long poisonedStream;

  ConsoleFixture(DataSource ds) {
    this.ds = ds;
    CommandOperations.of(ds).migrate();
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    ConsoleAudit.migrate(ds);
    this.queue = CommandQueue.builder(ds).codec(CODEC).meterRegistry(registry).build();
    this.events = EventStore.create(ds, CODEC);
    this.mail = MessageBalancer.create(ds, MAIL);
  }

  /** Declined charges: every 10th, until healed. */
  static boolean declined(int n) {
    return n % 10 == 3;
  }

  /** Starts the pumps, places {@code charges} charges and waits until the failures are parked. */
  ConsoleFixture start(int charges) throws Exception {
    CommandHandlers handlers =
        CommandHandlers.builder()
            .on(
                Charge.class,
                (c, ctx) -> {
                  if (declined(c.n()) && !healed.get()) {
                    throw new IllegalStateException(
                        "card declined for " + c.customer() + " (charge " + c.n() + ")");
                  }
                  events.append(ctx.tx(), List.of(new Charged(c.n(), c.cents())));
                  handledCharges.incrementAndGet();
                })
            .build();
    pumps.add(pump("charges", queue.driver(handlers)).maxFailures(2).build());
    EventDriver ledger =
        events.driver(
            LEDGER,
            EventHandlers.builder()
                .on(
                    Charged.class,
                    (e, ctx) -> {
                      if (ctx.streamId() == poisonedStream && !healed.get()) {
                        throw new IllegalStateException("ledger rejects stream " + ctx.streamId());
                      }
                    })
                .build());
    pumps.add(pump("ledger", ledger).maxFailures(2).build());
    pumps.add(
        pump(
                "mail",
                mail.driver(
                    BalancedHandlers.builder()
                        .on(
                            (m, ctx) -> {
                              if ((m.partitionKey().equals(BAD_KEY)
                                      || m.partitionKey().startsWith(FAILING_PREFIX))
                                  && !healed.get()) {
                                throw new IllegalStateException(
                                    "mailbox of " + BAD_KEY + " is full");
                              }
                              return Result.ok();
                            })
                        .build()))
            .maxFailures(2)
            .build());
    // The poisoned stream: three events the ledger fails on, so it parks with lag 3.
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      Tx tx = Tx.of(c);
      poisonedStream = events.createStream(tx);
      events.appendTo(
          tx, poisonedStream, List.of(new Charged(-1, 1), new Charged(-2, 2), new Charged(-3, 3)));
      c.commit();
    }
    for (int i = 0; i < charges; i++) {
      queue.enqueue(new Charge(i, "customer-" + (i % 7), 100 + i));
      mail.storeMessage("customer-" + (i % 7), ("receipt " + i).getBytes(StandardCharsets.UTF_8));
    }
    mail.storeMessage(BAD_KEY, "receipt".getBytes(StandardCharsets.UTF_8));
    pumps.forEach(MessagePump::start);
    int declined = 0;
    for (int i = 0; i < charges; i++) {
      declined += declined(i) ? 1 : 0;
    }
    int expected = declined;
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                queue.operations().deadLetters().count() == expected
                    && !events.operations().parked(LEDGER).isEmpty()
                    && mail.operations().parkedKeys(mail.group()).containsKey(BAD_KEY));
    return this;
  }

  /** Every failure cures: retried, resumed or unparked work is handled from now on. */
  void heal() {
    healed.set(true);
  }

  long poisonedStream() {
    return poisonedStream;
  }

  /** A few charges and mails a second, so the live charts move. */
  void startTraffic() {
    Thread t =
        new Thread(
            () -> {
              int i = 1_000;
              while (!Thread.currentThread().isInterrupted()) {
                try {
                  queue.enqueue(new Charge(i, "customer-" + (i % 7), 100 + i));
                  mail.storeMessage(
                      "customer-" + (i % 7), ("receipt " + i).getBytes(StandardCharsets.UTF_8));
                  i += 10; // never a declined number: traffic keeps flowing
                  Thread.sleep(150);
                } catch (InterruptedException e) {
                  return;
                } catch (RuntimeException e) {
                  // the database is closing
                  return;
                }
              }
            },
            "console-fixture-traffic");
    t.setDaemon(true);
    t.start();
    traffic = t;
  }

  /** Stops the background traffic and waits until its thread is gone. */
  void stopTraffic() throws InterruptedException {
    Thread t = traffic;
    if (t != null) {
      t.interrupt();
      t.join(10_000);
      traffic = null;
    }
  }

  private MessagePump.Builder pump(String name, Driver driver) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(2)
        .pollInterval(Duration.ofMillis(100))
        .backoff(Duration.ofMillis(20), Duration.ofMillis(200))
        .shutdownGrace(Duration.ofSeconds(2))
        .meterRegistry(registry);
  }

  @Override
  public void close() {
    Thread t = traffic;
    if (t != null) {
      t.interrupt();
    }
    pumps.forEach(MessagePump::close);
  }
}
