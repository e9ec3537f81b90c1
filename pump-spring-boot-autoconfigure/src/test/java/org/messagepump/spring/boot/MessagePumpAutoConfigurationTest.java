package org.messagepump.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.console.ConsoleServlet;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.engine.PumpHealth;
import org.messagepump.core.engine.PumpOptions;
import org.messagepump.eventstream.EventStore;
import org.messagepump.jackson3.Jackson3MessageCodec;
import org.messagepump.spring.boot.internal.DeliveryEntityManagers;
import org.messagepump.spring.boot.internal.PumpMeterRegistry;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.annotation.ImportCandidates;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Configuration without a database: with {@code auto-startup=false} and {@code migrate=none} the
 * context never opens a connection, so binding, validation and the beans can be checked fast.
 */
class MessagePumpAutoConfigurationTest {

  record Ping(String id) {}

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    DataSource dataSource() {
      return new PGSimpleDataSource(); // never connected in these tests
    }

    @Bean
    MessageTypes messageTypes() {
      return MessageTypes.builder().register(Ping.class, "test.Ping").build();
    }

    @Bean
    CommandPump pings() {
      return CommandPump.of(
          "pings", CommandHandlers.builder().on(Ping.class, (p, ctx) -> {}).build());
    }
  }

  /**
   * The auto-configurations messagepump's jars list: MessagePumpAutoConfiguration, and on Spring
   * Boot 3 (pump-spring-boot3-autoconfigure runs this test too) its health contributor's.
   */
  static Class<?>[] messagePumpAutoConfigurations() {
    ClassLoader loader = MessagePumpAutoConfigurationTest.class.getClassLoader();
    List<Class<?>> classes = new ArrayList<>();
    for (String name : ImportCandidates.load(AutoConfiguration.class, loader)) {
      if (name.startsWith("org.messagepump.")) {
        try {
          classes.add(Class.forName(name, false, loader));
        } catch (ClassNotFoundException e) {
          throw new IllegalStateException(name, e);
        }
      }
    }
    assertThat(classes).contains(MessagePumpAutoConfiguration.class);
    return classes.toArray(Class<?>[]::new);
  }

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(messagePumpAutoConfigurations()))
          .withUserConfiguration(App.class)
          .withPropertyValues("messagepump.auto-startup=false");

  @Test
  void declaresThePumpsAndTheTransactionalProducers() {
    runner.run(
        ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(MessagePumpRegistry.class).names()).containsExactly("pings");
          assertThat(ctx.getBean(MessagePumpRegistry.class).pump("pings").isRunning()).isFalse();
          assertThat(ctx).hasSingleBean(TransactionalCommandQueue.class);
          assertThat(ctx).hasSingleBean(TransactionalEventStore.class);
          assertThat(ctx).hasSingleBean(TransactionalBalancer.class);
        });
  }

  @Test
  void tracesThroughTheApplicationsObservationRegistryUnlessDisabled() {
    runner
        .withBean(
            io.micrometer.observation.ObservationRegistry.class,
            io.micrometer.observation.ObservationRegistry::create)
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx)
                  .hasSingleBean(org.messagepump.spring.boot.internal.PumpObservations.class);
            });
    runner
        .withBean(
            io.micrometer.observation.ObservationRegistry.class,
            io.micrometer.observation.ObservationRegistry::create)
        .withPropertyValues("messagepump.tracing.enabled=false")
        .run(
            ctx ->
                assertThat(ctx)
                    .doesNotHaveBean(org.messagepump.spring.boot.internal.PumpObservations.class));
    runner.run(
        ctx ->
            assertThat(ctx)
                .doesNotHaveBean(org.messagepump.spring.boot.internal.PumpObservations.class));
  }

  @Test
  void theApplicationsMeterRegistryGetsTheMetersAndWithoutMicrometerThereAreNone() {
    runner
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx).hasSingleBean(PumpMeterRegistry.class);
              MeterRegistry registry = ctx.getBean(MeterRegistry.class);
              assertThat(registry.find("messagepump.commands.enqueued").counters()).hasSize(2);
              assertThat(registry.find("messagepump.eventstream.appended").counter()).isNotNull();
              ctx.getBean(TransactionalBalancer.class).balancer("mails");
              assertThat(
                      registry
                          .find("messagepump.balancer.end_to_end.duration")
                          .tag("group", "mails")
                          .timer())
                  .isNotNull();
            });
    // micrometer-core is optional: without it, no meters and everything else as before.
    runner
        .withClassLoader(new FilteredClassLoader("io.micrometer.core"))
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx).doesNotHaveBean(PumpMeterRegistry.class);
              assertThat(ctx.getBean(MessagePumpRegistry.class).names()).containsExactly("pings");
              assertThat(ctx).hasSingleBean(CommandQueue.class);
              assertThat(ctx).hasSingleBean(EventStore.class);
              assertThat(ctx.getBean(TransactionalBalancer.class).balancer("mails")).isNotNull();
            });
  }

  @Test
  void withoutJpaOnTheClassPathThePumpsAreStillDeclared() {
    runner
        .withClassLoader(
            new FilteredClassLoader(
                "jakarta.persistence", "org.hibernate", "org.springframework.orm"))
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx).doesNotHaveBean(DeliveryEntityManagers.class);
              assertThat(ctx.getBean(MessagePumpRegistry.class).names()).containsExactly("pings");
            });
  }

  @Test
  void theCodecIsJackson3sWithPumpJackson3AndJackson2sWithout() {
    runner.run(
        ctx ->
            assertThat(ctx.getBean(MessageCodec.class)).isInstanceOf(Jackson3MessageCodec.class));
    runner
        .withClassLoader(new FilteredClassLoader("org.messagepump.jackson3"))
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx.getBean(MessageCodec.class)).isInstanceOf(JsonMessageCodec.class);
            });
    runner
        .withBean(MessageCodec.class, () -> JsonMessageCodec.of(MessageTypes.builder().build()))
        .run(
            ctx ->
                assertThat(ctx.getBean(MessageCodec.class)).isInstanceOf(JsonMessageCodec.class));
  }

  @Test
  void withJpaButNoEntityManagerFactoryNothingIsBound() {
    runner.run(ctx -> assertThat(ctx.getBean(DeliveryEntityManagers.class).factories()).isEmpty());
  }

  @Test
  void unsetOptionsTakeTheDefaultsPropertiesAndOwnOptionsOverrideThem() {
    runner
        .withPropertyValues(
            "messagepump.defaults.workers=2",
            "messagepump.defaults.max-failures=5",
            "messagepump.defaults.handler-timeout=30s",
            "messagepump.defaults.handler-timeout-by-type.[test.Ping]=1m",
            "messagepump.defaults.handler-timeout-by-type.[test.Pong]=2m",
            "messagepump.pumps.pings.workers=3",
            "messagepump.pumps.pings.handler-timeout-by-type.[test.Ping]=5s")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              MessagePumpProperties.Pump p =
                  ctx.getBean(MessagePumpProperties.class).options("pings");
              assertThat(p.getWorkers()).isEqualTo(3);
              assertThat(p.getMaxFailures()).isEqualTo(5);
              assertThat(p.getHandlerTimeout()).isEqualTo(Duration.ofSeconds(30));
              assertThat(p.getHandlerTimeoutByType())
                  .containsExactlyInAnyOrderEntriesOf(
                      Map.of(
                          "test.Ping", Duration.ofSeconds(5), "test.Pong", Duration.ofMinutes(2)));
              // Unset here and under defaults: the pump takes PumpOptions.defaults().
              assertThat(p.getBatchSize()).isNull();
              assertThat(p.getNotifications()).isNull();
              assertThat(p.getNotificationsDataSource()).isNull();
            });
  }

  @Test
  void retryPropertiesMapToTheRetryPoliciesOfThePumpAndOfSingleTypes() {
    runner
        .withPropertyValues(
            "messagepump.defaults.backoff-base=50ms",
            "messagepump.defaults.retry.max-attempts=5",
            "messagepump.defaults.retry.non-retryable=java.lang.IllegalArgumentException",
            "messagepump.defaults.retry.by-type.[test.Pong].forever=true",
            "messagepump.pumps.pings.retry.backoff-cap=1m",
            "messagepump.pumps.pings.retry.by-type.[test.Ping].max-attempts=2",
            "messagepump.pumps.pings.retry.by-type.[test.Ping].fixed-delay=3s",
            "messagepump.pumps.pings.retry.by-type.[test.Ping].non-retryable="
                + "java.io.IOException,java.lang.IllegalStateException")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              MessagePumpProperties.Pump p =
                  ctx.getBean(MessagePumpProperties.class).options("pings");
              RetryPolicy pump =
                  RetryPolicy.defaults()
                      .withMaxAttempts(5)
                      .withExponentialBackoff(Duration.ofMillis(50), Duration.ofMinutes(1))
                      .withNonRetryable(IllegalArgumentException.class);
              assertThat(p.retryPolicy()).isEqualTo(pump);
              assertThat(p.retryPolicyByType())
                  .containsExactlyInAnyOrderEntriesOf(
                      Map.of(
                          "test.Ping",
                          pump.withMaxAttempts(2)
                              .withFixedDelay(Duration.ofSeconds(3))
                              .withNonRetryable(
                                  java.io.IOException.class, IllegalStateException.class),
                          "test.Pong",
                          pump.withMaxAttempts(RetryPolicy.UNLIMITED_ATTEMPTS)));
            });
    // Nothing set: the finite default policy; max-failures and the backoff shorthands change it.
    runner.run(
        ctx ->
            assertThat(ctx.getBean(MessagePumpProperties.class).options("pings").retryPolicy())
                .isEqualTo(RetryPolicy.defaults()));
    runner
        .withPropertyValues("messagepump.pumps.pings.max-failures=3")
        .run(
            ctx ->
                assertThat(ctx.getBean(MessagePumpProperties.class).options("pings").retryPolicy())
                    .isEqualTo(RetryPolicy.defaults().withMaxAttempts(3)));
  }

  @Test
  void badRetryPropertiesFailTheStartupNamingTheProperty() {
    Map<String, String> bad =
        Map.of(
            "messagepump.pumps.pings.retry.max-attempts=0", "retry: maxAttempts must be >= 1",
            "messagepump.defaults.retry.by-type.[test.Ping].fixed-delay=0s",
                "retry.by-type.[test.Ping]: fixedDelay",
            "messagepump.pumps.pings.retry.fixed-delay=1s",
                "retry: fixed-delay excludes backoff-base",
            "messagepump.pumps.pings.max-failures=0", "maxFailures");
    bad.forEach(
        (property, message) ->
            runner
                .withPropertyValues(property, "messagepump.pumps.pings.retry.backoff-base=1s")
                .run(
                    ctx ->
                        assertThat(ctx)
                            .getFailure()
                            .hasRootCauseInstanceOf(IllegalArgumentException.class)
                            .hasStackTraceContaining(
                                "messagepump.pumps.pings (or messagepump.defaults): " + message)));
    runner
        .withPropertyValues("messagepump.pumps.pings.retry.non-retryable=java.lang.String")
        .run(ctx -> assertThat(ctx).hasFailed());
  }

  @Test
  void unknownPropertiesFailTheStartupNamingThem() {
    for (String typo :
        List.of(
            "messagepump.pumps.pings.max-failure=3",
            "messagepump.pumps.pings.handler-timout=5s",
            "messagepump.defaults.handler-timout=5s",
            "messagepump.workers=2",
            "messagepump.console.pth=/ops",
            "messagepump.commands.shema=orders")) {
      String name = typo.substring(0, typo.indexOf('='));
      runner
          .withPropertyValues(typo)
          .run(
              ctx ->
                  assertThat(ctx)
                      .getFailure()
                      .rootCause()
                      .isInstanceOf(UnboundConfigurationPropertiesException.class)
                      .hasMessageContaining(name));
    }
  }

  @Test
  void disabledCreatesNoPumpsButKeepsTheProducers() {
    runner
        .withPropertyValues("messagepump.enabled=false", "messagepump.pumps.pings.workers=2")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              MessagePumpRegistry registry = ctx.getBean(MessagePumpRegistry.class);
              assertThat(registry.names()).isEmpty();
              assertThatThrownBy(() -> registry.pump("pings"))
                  .isInstanceOf(IllegalArgumentException.class)
                  .hasMessageContaining("pings");
              assertThat(ctx).doesNotHaveBean("messagepumpHealthContributor");
              assertThat(ctx).hasSingleBean(TransactionalCommandQueue.class);
            });
    runner.run(
        ctx -> {
          assertThat(ctx.getBean(MessagePumpRegistry.class).names()).containsExactly("pings");
          assertThat(ctx).hasBean("messagepumpHealthContributor");
        });
  }

  @Test
  void theRegistryHandlesAPumpWhileTheContextIsStopped() {
    runner.run(
        ctx -> {
          PumpHandle pings = ctx.getBean(MessagePumpRegistry.class).pump("pings");
          assertThat(pings.name()).isEqualTo("pings");
          assertThat(pings.isRunning()).isFalse();
          assertThat(pings.health().state()).isEqualTo(PumpHealth.State.STOPPED);
          assertThat(pings.isPaused()).isFalse();
          pings.pause();
          assertThat(pings.isPaused()).isTrue();
          pings.resume();
          assertThat(pings.isPaused()).isFalse();
          assertThatThrownBy(() -> ctx.getBean(MessagePumpRegistry.class).pump("pongs"))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("[pings]");
        });
  }

  @Test
  void aBadDefaultFailsTheStartupNamingTheProperty() {
    runner
        .withPropertyValues("messagepump.defaults.handler-timeout=0s")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasRootCauseInstanceOf(IllegalArgumentException.class)
                    .hasStackTraceContaining("messagepump.pumps.pings (or messagepump.defaults)")
                    .hasStackTraceContaining("handlerTimeout must be positive"));
  }

  @Test
  void aNotificationsDataSourceMustNameADataSourceBean() {
    runner
        .withPropertyValues("messagepump.pumps.pings.notifications-data-source=direct")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("messagepump.pumps.pings.notifications-data-source")
                    .hasMessageContaining("'direct'"));
    runner
        .withPropertyValues("messagepump.defaults.notifications-data-source=messageTypes")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("messagepump.pumps.pings.notifications-data-source")
                    .hasStackTraceContaining("not a DataSource"));
  }

  @Test
  void theSchemasAreTheModulesDefaultsAndABadOneFailsNamingTheProperty() {
    runner.run(
        ctx -> {
          MessagePumpProperties p = ctx.getBean(MessagePumpProperties.class);
          assertThat(p.getCommands().getSchema()).isEqualTo(CommandQueue.DEFAULT_SCHEMA);
          assertThat(p.getEvents().getSchema()).isEqualTo(EventStore.DEFAULT_SCHEMA);
          assertThat(p.getBalancer().getSchema()).isEqualTo(BalancerOperations.DEFAULT_SCHEMA);
          assertThat(ctx.getBean(CommandQueue.class).schema()).isEqualTo("commandqueue");
        });
    for (String bad :
        List.of(
            "messagepump.commands.schema=Orders",
            "messagepump.events.schema=pg_events",
            "messagepump.balancer.schema=1balancer")) {
      runner
          .withPropertyValues(bad)
          .run(
              ctx ->
                  assertThat(ctx)
                      .getFailure()
                      .rootCause()
                      .isInstanceOf(IllegalArgumentException.class)
                      .hasMessageStartingWith(bad.substring(0, bad.indexOf('='))));
    }
  }

  @Test
  void aBadOptionFailsTheStartupNamingIt() {
    runner
        .withPropertyValues("messagepump.pumps.pings.batch-size=100")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("batchSize must be between 1 and 64: 100"));
  }

  @Test
  void optionsForAPumpNoBeanDeclaresFailTheStartup() {
    runner
        .withPropertyValues("messagepump.pumps.pigns.workers=2")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("messagepump.pumps.pigns")
                    .hasMessageContaining("[pings]"));
  }

  @Test
  void theConfigurationMetadataDescribesEveryPropertyAndEveryPumpOption() throws Exception {
    JsonNode metadata;
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      metadata = new ObjectMapper().readTree(in);
    }
    Map<String, JsonNode> properties = new TreeMap<>();
    metadata.get("properties").forEach(p -> properties.put(p.get("name").asText(), p));
    assertThat(properties).hasSizeGreaterThan(20);
    for (JsonNode p : properties.values()) {
      assertThat(p.path("description").asText())
          .as("description of %s", p.get("name").asText())
          .isNotBlank();
    }
    // The map's values are the documented Pump type: each of its options (every setter) is
    // described under messagepump.defaults, and messagepump.pumps names that type.
    assertThat(properties.get("messagepump.pumps").get("type").asText())
        .isEqualTo(
            "java.util.Map<java.lang.String,org.messagepump.spring.boot.MessagePumpProperties$Pump>");
    List<String> pumpOptions =
        Arrays.stream(MessagePumpProperties.Pump.class.getDeclaredMethods())
            .filter(m -> m.getName().startsWith("set"))
            .map(m -> kebab(m.getName().substring(3)))
            .toList();
    assertThat(pumpOptions).hasSize(11);
    for (String option : pumpOptions) {
      JsonNode p = properties.get("messagepump.defaults." + option);
      assertThat(p).as("messagepump.defaults.%s", option).isNotNull();
      assertThat(p.get("sourceType").asText())
          .isEqualTo("org.messagepump.spring.boot.MessagePumpProperties$Pump");
    }
    // The documented defaults are those of PumpOptions.defaults().
    assertThat(properties.get("messagepump.defaults.workers").get("defaultValue").asInt())
        .isEqualTo(PumpOptions.defaults().workers());
    assertThat(properties.get("messagepump.defaults.batch-size").get("defaultValue").asInt())
        .isEqualTo(PumpOptions.defaults().batchSize());
    assertThat(properties.get("messagepump.defaults.notifications").get("defaultValue").asBoolean())
        .isEqualTo(PumpOptions.defaults().notifications());
    Map<String, Duration> durations =
        Map.of(
            "poll-interval", PumpOptions.defaults().pollInterval(),
            "backoff-base", PumpOptions.defaults().retryPolicy().backoffBase(),
            "backoff-cap", PumpOptions.defaults().retryPolicy().backoffCap(),
            "shutdown-grace", PumpOptions.defaults().shutdownGrace());
    durations.forEach(
        (option, expected) ->
            assertThat(
                    DurationStyle.detectAndParse(
                        properties
                            .get("messagepump.defaults." + option)
                            .get("defaultValue")
                            .asText()))
                .as(option)
                .isEqualTo(expected));
    assertThat(properties.get("messagepump.commands.schema").get("defaultValue").asText())
        .isEqualTo(CommandQueue.DEFAULT_SCHEMA);
    assertThat(properties.get("messagepump.events.schema").get("defaultValue").asText())
        .isEqualTo(EventStore.DEFAULT_SCHEMA);
    assertThat(properties.get("messagepump.balancer.schema").get("defaultValue").asText())
        .isEqualTo(BalancerOperations.DEFAULT_SCHEMA);
  }

  private static String kebab(String camel) {
    return camel.replaceAll("([a-z])([A-Z])", "$1-$2").toLowerCase(java.util.Locale.ROOT);
  }

  private final WebApplicationContextRunner web =
      new WebApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(MessagePumpAutoConfiguration.class))
          .withUserConfiguration(App.class)
          .withPropertyValues("messagepump.auto-startup=false");

  @Test
  void theConsoleIsMountedOnlyWhenEnabledAndUnderItsPath() {
    web.run(ctx -> assertThat(ctx).doesNotHaveBean("messagepumpConsole"));
    web.withPropertyValues(
            "messagepump.console.enabled=true", "messagepump.console.path=/ops/pump/")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              ServletRegistrationBean<?> console =
                  ctx.getBean("messagepumpConsole", ServletRegistrationBean.class);
              assertThat(console.getUrlMappings()).containsExactly("/ops/pump/*");
              assertThat(console.getServlet()).isInstanceOf(ConsoleServlet.class);
              ConsoleServlet servlet = (ConsoleServlet) console.getServlet();
              assertThat(servlet.config().commandsSchema()).isEqualTo("commandqueue");
              assertThat(servlet.config().meterRegistry()).isNull();
            });
    web.withPropertyValues("messagepump.console.enabled=true")
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .run(
            ctx -> {
              ConsoleServlet servlet =
                  (ConsoleServlet)
                      ctx.getBean("messagepumpConsole", ServletRegistrationBean.class).getServlet();
              assertThat(servlet.config().meterRegistry())
                  .isSameAs(ctx.getBean(MeterRegistry.class));
            });
    web.withPropertyValues(
            "messagepump.console.enabled=true",
            "messagepump.commands.schema=orders_q",
            "messagepump.events.schema=orders_ev",
            "messagepump.balancer.schema=orders_bal")
        .run(
            ctx -> {
              ConsoleServlet servlet =
                  (ConsoleServlet)
                      ctx.getBean("messagepumpConsole", ServletRegistrationBean.class).getServlet();
              assertThat(servlet.config().commandsSchema()).isEqualTo("orders_q");
              assertThat(servlet.config().eventsSchema()).isEqualTo("orders_ev");
              assertThat(servlet.config().balancerSchema()).isEqualTo("orders_bal");
            });
    // Not a web application: nothing to mount it in.
    runner
        .withPropertyValues("messagepump.console.enabled=true")
        .run(ctx -> assertThat(ctx).doesNotHaveBean("messagepumpConsole"));
  }

  @Test
  void aBadConsolePathOrTokenFailsTheStartupNamingIt() {
    web.withPropertyValues("messagepump.console.enabled=true", "messagepump.console.path=ops pump")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("messagepump.console.path"));
    web.withPropertyValues(
            "messagepump.console.enabled=true", "messagepump.console.access-token=short")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("accessToken must have at least 16 characters"));
  }
}
