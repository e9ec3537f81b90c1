package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.CommandRetention;
import org.messagepump.commands.CommandScheduler;
import org.messagepump.commands.Schedule;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.resilience4j.ResilientDriver;
import org.messagepump.testkit.PostgresExtension;

/**
 * An application without Micrometer: micrometer-core (and micrometer-commons, -observation and
 * their own dependencies) are left off this test's class path by the {@code without-micrometer}
 * failsafe execution, the only one that sets {@code messagepump.test.without-micrometer}. Every
 * driver runs in a pump (handled work, a failure that parks), their operations and gauges are
 * called, the scheduler and the retention job run, and the console serves its pages: no class may
 * need Micrometer for any of it.
 */
@ExtendWith(PostgresExtension.class)
@Tag("without-micrometer")
@EnabledIfSystemProperty(named = "messagepump.test.without-micrometer", matches = "true")
class WithoutMicrometerIT {

  record Order(int n) {}

  record Shipped(int n) {}

  static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(
          MessageTypes.builder()
              .register(Order.class, "nomm.Order")
              .register(Shipped.class, "nomm.Shipped")
              .build());

  static final int ORDERS = 20;
  static final int FAILING_ORDER = 13;
  static final int FAILING_SHIPMENT = 7;
  static final String LEDGER = "nomm-ledger";
  static final String BAD_KEY = "bad";

  @BeforeAll
  static void micrometerIsNotOnTheClassPath() {
    assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
        .isInstanceOf(ClassNotFoundException.class);
    assertThatThrownBy(() -> Class.forName("io.micrometer.common.KeyValue"))
        .isInstanceOf(ClassNotFoundException.class);
  }

  @Test
  void everyDriverTheJobsAndTheConsoleRunWithoutMicrometer(DataSource ds) throws Exception {
    CommandOperations.of(ds).migrate();
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    ConsoleAudit.migrate(ds);
    CommandQueue queue = CommandQueue.builder(ds).codec(CODEC).build();
    EventStore store = EventStore.create(ds, CODEC);
    MessageBalancer mail = MessageBalancer.create(ds, "nomm-mail");
    AtomicInteger shipped = new AtomicInteger();
    AtomicInteger mailed = new AtomicInteger();

    CommandHandlers orders =
        CommandHandlers.builder()
            .on(
                Order.class,
                (o, ctx) -> {
                  if (o.n() == FAILING_ORDER) {
                    throw new IllegalStateException("order " + o.n() + " is refused");
                  }
                  // A stream per shipment, so the refused one parks only its own.
                  long stream = store.createStream(ctx.tx());
                  store.appendTo(ctx.tx(), stream, List.of(new Shipped(o.n())));
                })
            .build();
    // Resilience4j's guards, without resilience4j-micrometer either.
    Driver guarded =
        ResilientDriver.builder(queue.driver(orders))
            .circuitBreaker("nomm.Order", CircuitBreakerConfig.ofDefaults())
            .build();
    EventDriver ledger =
        store.driver(
            LEDGER,
            EventHandlers.builder()
                .on(
                    Shipped.class,
                    (e, ctx) -> {
                      if (e.n() == FAILING_SHIPMENT) {
                        throw new IllegalStateException("ledger refuses shipment " + e.n());
                      }
                      shipped.incrementAndGet();
                    })
                .build());
    Driver mailer =
        mail.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      if (m.partitionKey().equals(BAD_KEY)) {
                        throw new IllegalStateException("mailbox full");
                      }
                      mailed.incrementAndGet();
                      return Result.ok();
                    })
                .build());

    List<MessagePump> pumps = new ArrayList<>();
    CommandScheduler scheduler = CommandScheduler.builder(queue).build();
    CommandRetention retention = CommandRetention.builder(queue.operations()).build();
    ConsoleServer console = null;
    try {
      pumps.add(pump(ds, "nomm-orders", guarded));
      pumps.add(pump(ds, "nomm-ledger", ledger));
      pumps.add(pump(ds, "nomm-mail", mailer));
      queue.defineSchedule(Schedule.every("nomm-tick", Duration.ofHours(1), new Order(100)));
      for (int i = 0; i < ORDERS; i++) {
        queue.enqueue(new Order(i));
        mail.storeMessage("key-" + (i % 4), ("mail " + i).getBytes(StandardCharsets.UTF_8));
      }
      mail.storeMessage(BAD_KEY, "mail".getBytes(StandardCharsets.UTF_8));
      pumps.forEach(MessagePump::start);
      scheduler.start();
      retention.start();
      assertThat(queue.operations().schedules().trigger("nomm-tick")).isPresent();

      // Every order but one, and the schedule's tick, ship; every shipment but one is booked;
      // every mail but the bad key's is sent. Each failure parks where its driver parks.
      await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> {
                assertThat(queue.operations().deadLetters().count())
                    .as("dead letters")
                    .isEqualTo(1);
                assertThat(store.operations().parked(LEDGER)).as("parked streams").hasSize(1);
                assertThat(mail.operations().parkedKeys(mail.group()))
                    .as("parked keys")
                    .containsOnlyKeys(BAD_KEY);
                assertThat(shipped.get()).as("shipments booked").isEqualTo(ORDERS - 1);
                assertThat(mailed.get()).as("mails sent").isEqualTo(ORDERS);
              });

      // The operations and readings the gauges are made of.
      assertThat(queue.operations().deadLetters().list(10)).singleElement();
      assertThat(queue.operations().depth().of("nomm.Order").deadLetters()).isEqualTo(1);
      assertThat(store.operations().lag(LEDGER)).isEqualTo(1);
      assertThat(store.operations().lagSummaries()).isNotEmpty();
      assertThat(mail.operations().stats(mail.group()).parked()).isEqualTo(1);
      assertThat(mail.operations().partitionStats(mail.group(), BAD_KEY)).isPresent();
      assertThat(queue.operations().schedules().list()).hasSize(1);
      assertThat(retention.purge()).isNotNull();
      for (MessagePump p : pumps) {
        assertThat(p.isRunning()).isTrue();
        assertThat(p.health()).isNotNull();
      }
      await().atMost(Duration.ofSeconds(30)).until(() -> scheduler.checks() > 0);

      console = ConsoleServer.start(ds, ConsoleConfig.builder().build(), "127.0.0.1", 0);
      Http h = new Http(console.uri());
      HttpResponse<String> overview = h.get("");
      assertThat(overview.statusCode()).isEqualTo(200);
      assertThat(overview.body()).contains("application's MeterRegistry");
      for (String page :
          List.of(
              "commands",
              "events",
              "events?handler=" + LEDGER,
              "balancer",
              "balancer?group=nomm-mail",
              "jobs?driver=commands",
              "audit",
              "api/overview")) {
        assertThat(h.get(page).statusCode()).as(page).isEqualTo(200);
      }
      // A refused request counts in the console's meters, which are none here.
      assertThat(h.get("commands", "Host", "evil.example").statusCode()).isEqualTo(421);
    } finally {
      if (console != null) {
        console.close();
      }
      retention.close();
      scheduler.close();
      pumps.forEach(MessagePump::close);
    }
  }

  private static MessagePump pump(DataSource ds, String name, Driver driver) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(2)
        .pollInterval(Duration.ofMillis(100))
        .backoff(Duration.ofMillis(20), Duration.ofMillis(200))
        .maxFailures(2)
        .shutdownGrace(Duration.ofSeconds(2))
        .build();
  }
}
