package org.messagepump.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.console.ConsoleServlet;
import org.messagepump.core.MessagePump;
import org.messagepump.core.MessageTypes;
import org.messagepump.spring.boot.internal.DeliveryEntityManagers;
import org.messagepump.spring.boot.internal.MessagePumps;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
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

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(MessagePumpAutoConfiguration.class))
          .withUserConfiguration(App.class)
          .withPropertyValues("messagepump.auto-startup=false");

  @Test
  void declaresThePumpsAndTheTransactionalProducers() {
    runner.run(
        ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(MessagePumps.class).names()).containsExactly("pings");
          assertThat(ctx.getBean(MessagePumps.class).isRunning()).isFalse();
          assertThat(ctx).hasSingleBean(TransactionalCommandQueue.class);
          assertThat(ctx).hasSingleBean(TransactionalEventStore.class);
          assertThat(ctx).hasSingleBean(TransactionalBalancer.class);
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
              assertThat(ctx.getBean(MessagePumps.class).names()).containsExactly("pings");
            });
  }

  @Test
  void withJpaButNoEntityManagerFactoryNothingIsBound() {
    runner.run(ctx -> assertThat(ctx.getBean(DeliveryEntityManagers.class).factories()).isEmpty());
  }

  @Test
  void unsetOptionsTakeTheMessagePumpDefaults() {
    runner.run(
        ctx -> {
          MessagePumpProperties.Pump p =
              ctx.getBean(MessagePumpProperties.class)
                  .getPumps()
                  .getOrDefault("pings", new MessagePumpProperties.Pump());
          assertThat(p.getWorkers()).isEqualTo(MessagePump.DEFAULT_WORKERS);
          assertThat(p.getPollInterval()).isEqualTo(MessagePump.DEFAULT_POLL_INTERVAL);
          assertThat(p.getShutdownGrace()).isEqualTo(MessagePump.DEFAULT_SHUTDOWN_GRACE);
          assertThat(p.getMaxFailures()).isNull();
        });
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
  void theConfigurationMetadataIsGenerated() throws Exception {
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      String json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(json)
          .contains("\"messagepump.migrate\"")
          .contains("\"messagepump.pumps\"")
          .contains("MessagePumpProperties$Pump")
          .contains("How the library's tables are created or upgraded at startup");
    }
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
