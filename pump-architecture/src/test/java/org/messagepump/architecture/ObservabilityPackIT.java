package org.messagepump.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.micrometer.core.instrument.Meter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The operations pack in {@code docs/observability/} names only what the code emits: a pump of each
 * driver works (a command handled and one parked, events handled, a balanced message handled) with
 * Micrometer's Prometheus registry; every metric an alert rule or a dashboard panel names is in its
 * scrape, and the meter table of {@code docs/observability.md} lists exactly the meters registered.
 */
@ExtendWith(PostgresExtension.class)
class ObservabilityPackIT {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Pattern METRIC = Pattern.compile("\\bmessagepump_[a-z_]+");
  private static final Pattern DOC_METER = Pattern.compile("^\\| `(messagepump\\.[a-z_.]+)`");

  record PlaceOrder(String id) {}

  record OrderPlaced(String id) {}

  @Test
  void theAlertRulesTheDashboardAndTheMeterTableNameWhatTheCodeEmits(TestDatabase db)
      throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    work(db.dataSource(), registry);
    String scrape = registry.scrape();
    Set<String> exported = new TreeSet<>();
    for (String line : scrape.split("\n")) {
      if (!line.isEmpty() && !line.startsWith("#")) {
        exported.add(line.split("[{ ]", 2)[0]);
      }
    }

    JsonNode rules =
        new YAMLMapper()
            .readTree(ROOT.resolve("docs/observability/prometheus-alerts.yml").toFile());
    List<String> alerts = new ArrayList<>();
    for (JsonNode group : rules.path("groups")) {
      assertThat(group.path("name").asText()).isNotBlank();
      for (JsonNode rule : group.path("rules")) {
        String alert = rule.path("alert").asText();
        alerts.add(alert);
        assertThat(alert).as(rule.toString()).matches("Messagepump[A-Za-z]+");
        assertThat(rule.path("labels").path("severity").asText())
            .as(alert)
            .isIn("warning", "critical");
        assertThat(rule.path("annotations").path("summary").asText()).as(alert).isNotBlank();
        assertThat(rule.path("annotations").path("description").asText()).as(alert).isNotBlank();
        assertNamesExported(alert, rule.path("expr").asText(), exported);
      }
    }
    assertThat(alerts)
        .contains(
            "MessagepumpCommandsWaiting",
            "MessagepumpCommandBacklogGrowing",
            "MessagepumpEventHandlerLagging",
            "MessagepumpDeliveriesParked",
            "MessagepumpPumpDegraded");

    JsonNode dashboard =
        new ObjectMapper()
            .readTree(ROOT.resolve("docs/observability/grafana-dashboard.json").toFile());
    assertThat(dashboard.path("panels").size()).isPositive();
    for (JsonNode panel : dashboard.path("panels")) {
      assertThat(panel.path("targets").size()).as(panel.path("title").asText()).isPositive();
      for (JsonNode target : panel.path("targets")) {
        assertNamesExported(panel.path("title").asText(), target.path("expr").asText(), exported);
      }
    }

    Set<String> documented = new TreeSet<>();
    for (String line :
        Files.readAllLines(ROOT.resolve("docs/observability.md"), StandardCharsets.UTF_8)) {
      Matcher m = DOC_METER.matcher(line);
      if (m.find()) {
        documented.add(m.group(1));
      }
    }
    Set<String> registered =
        registry.getMeters().stream()
            .map(Meter::getId)
            .map(Meter.Id::getName)
            .filter(n -> n.startsWith("messagepump."))
            .collect(Collectors.toCollection(TreeSet::new));
    // The lease meters exist in lease mode only, the purge counter with a retention job; both are
    // documented with the others.
    documented.removeAll(
        Set.of(
            "messagepump.leases.heartbeats",
            "messagepump.leases.extended",
            "messagepump.leases.lost",
            "messagepump.commands.leases.expired",
            "messagepump.balancer.leases.expired",
            "messagepump.balancer.lease.operations",
            "messagepump.commands.purged"));
    assertThat(documented).isEqualTo(registered);
  }

  private static void assertNamesExported(String where, String expr, Set<String> exported) {
    Matcher m = METRIC.matcher(expr);
    int found = 0;
    while (m.find()) {
      found++;
      assertThat(exported).as(where + ": " + expr).contains(m.group());
    }
    assertThat(found).as(where + " names no messagepump metric: " + expr).isPositive();
  }

  /** A pump of each driver, each with some work done, all on {@code registry}. */
  private static void work(DataSource ds, PrometheusMeterRegistry registry) {
    CommandOperations.of(ds).migrate();
    EventOperations.of(ds).migrate();
    BalancerOperations.of(ds).migrate();
    JsonMessageCodec codec =
        JsonMessageCodec.of(
            MessageTypes.builder()
                .register(PlaceOrder.class, "ops.PlaceOrder")
                .register(OrderPlaced.class, "ops.OrderPlaced")
                .build());
    CommandQueue queue = CommandQueue.builder(ds).codec(codec).meterRegistry(registry).build();
    EventStore store = EventStore.builder(ds, codec).meterRegistry(registry).build();
    MessageBalancer group = MessageBalancer.builder(ds, "ops").meterRegistry(registry).build();
    List<String> handled = new java.util.concurrent.CopyOnWriteArrayList<>();
    try (MessagePump commands =
            MessagePump.builder(ds)
                .name("ops-commands")
                .driver(
                    queue.driver(
                        CommandHandlers.builder()
                            .on(
                                PlaceOrder.class,
                                (c, ctx) -> {
                                  if (c.id().equals("poison")) {
                                    throw new IllegalStateException("poison");
                                  }
                                  handled.add("command " + c.id());
                                })
                            .build()))
                .maxFailures(1)
                .pollInterval(Duration.ofMillis(50))
                .meterRegistry(registry)
                .build();
        MessagePump events =
            MessagePump.builder(ds)
                .name("ops-events")
                .driver(
                    store.driver(
                        "ops-projection",
                        EventHandlers.builder()
                            .on(OrderPlaced.class, (e, ctx) -> handled.add("event " + e.id()))
                            .build()))
                .pollInterval(Duration.ofMillis(50))
                .meterRegistry(registry)
                .build();
        MessagePump balanced =
            MessagePump.builder(ds)
                .name("ops-balancer")
                .driver(
                    group.driver(
                        BalancedHandlers.builder()
                            .on(
                                (message, ctx) -> {
                                  handled.add("balanced " + message.id());
                                  return Result.ok();
                                })
                            .build()))
                .pollInterval(Duration.ofMillis(50))
                .meterRegistry(registry)
                .build()) {
      commands.start();
      events.start();
      balanced.start();
      queue.enqueue(new PlaceOrder("1"));
      queue.enqueue(new PlaceOrder("poison"));
      Transactions.inNew(
          ds,
          "appending",
          tx -> store.appendToKey(tx, "order-1", 0, List.of(new OrderPlaced("1"))));
      group.storeMessage("key-1", new byte[] {1});
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> handled.size() == 3 && queue.operations().deadLetters().count() == 1);
    }
  }
}
