package org.messagepump.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.MessageTypes;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.spring.boot.internal.PumpMeterRegistry;
import org.messagepump.testkit.PostgresServer;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A Spring Boot application without micrometer-core, as one without Actuator is (Spring's own
 * micrometer-observation is there): the {@code without-micrometer} failsafe execution, the only one
 * that sets {@code messagepump.test.without-micrometer}, leaves micrometer-core off the class path.
 * The auto-configuration declares no meter registry bean, and a pump of each driver, the producers
 * and the console run as with it.
 */
@Tag("without-micrometer")
@EnabledIfSystemProperty(named = "messagepump.test.without-micrometer", matches = "true")
class WithoutMicrometerIT {

  record Ping(String id) {}

  record Pong(String id) {}

  static final Set<String> pinged = ConcurrentHashMap.newKeySet();
  static final Set<String> ponged = ConcurrentHashMap.newKeySet();
  static final Set<String> mailed = ConcurrentHashMap.newKeySet();

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    MessageTypes messageTypes() {
      return MessageTypes.builder()
          .register(Ping.class, "nomm.Ping")
          .register(Pong.class, "nomm.Pong")
          .build();
    }

    @Bean
    CommandPump pings() {
      return CommandPump.of(
          "pings",
          CommandHandlers.builder()
              .on(
                  Ping.class,
                  (p, ctx) -> {
                    if (p.id().equals("bad")) {
                      throw new IllegalStateException("bad ping");
                    }
                    pinged.add(p.id());
                  })
              .build());
    }

    @Bean
    EventPump pongs() {
      return EventPump.of(
          "pongs",
          "nomm-pongs",
          EventHandlers.builder().on(Pong.class, (e, ctx) -> ponged.add(e.id())).build());
    }

    @Bean
    BalancedPump mails() {
      return BalancedPump.of(
          "mails",
          "nomm-mails",
          BalancedHandlers.builder()
              .on(
                  (m, ctx) -> {
                    mailed.add(m.partitionKey());
                    return Result.ok();
                  })
              .build());
    }
  }

  @BeforeAll
  static void micrometerCoreIsNotOnTheClassPath() {
    assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
        .isInstanceOf(ClassNotFoundException.class);
  }

  @Test
  void thePumpsTheProducersAndTheConsoleRunWithoutMicrometer() {
    String database = PostgresServer.get().createDatabase();
    new WebApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(
                org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration.class,
                MessagePumpAutoConfiguration.class))
        .withUserConfiguration(App.class)
        .withPropertyValues(SpringTestDatabase.properties(database))
        .withPropertyValues(
            "messagepump.migrate=library",
            "messagepump.defaults.poll-interval=100ms",
            "messagepump.defaults.max-failures=1",
            "messagepump.console.enabled=true")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx).doesNotHaveBean(PumpMeterRegistry.class);
              assertThat(ctx.getBean("messagepumpConsole", ServletRegistrationBean.class))
                  .isNotNull();
              TransactionalCommandQueue commands = ctx.getBean(TransactionalCommandQueue.class);
              commands.enqueue(new Ping("a"));
              commands.enqueue(new Ping("bad"));
              ctx.getBean(TransactionalEventStore.class).append(List.of(new Pong("b")));
              ctx.getBean(TransactionalBalancer.class)
                  .storeMessage("nomm-mails", "c", "mail".getBytes(StandardCharsets.UTF_8));
              CommandQueue queue = ctx.getBean(CommandQueue.class);
              await()
                  .atMost(Duration.ofSeconds(30))
                  .untilAsserted(
                      () -> {
                        assertThat(pinged).containsExactly("a");
                        assertThat(queue.operations().deadLetters().count()).isEqualTo(1);
                        assertThat(ponged).containsExactly("b");
                        assertThat(mailed).containsExactly("c");
                      });
              MessagePumpRegistry pumps = ctx.getBean(MessagePumpRegistry.class);
              assertThat(pumps.names()).containsExactlyInAnyOrder("pings", "pongs", "mails");
              for (String name : pumps.names()) {
                assertThat(pumps.pump(name).isRunning()).as(name).isTrue();
              }
            });
  }
}
