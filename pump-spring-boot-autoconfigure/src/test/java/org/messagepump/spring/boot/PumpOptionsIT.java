package org.messagepump.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.PumpHealth;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.PostgresServer;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * The pump options reachable from properties and beans, each observed on running pumps over a real
 * PostgreSQL: shared defaults and per-pump overrides (handler timeouts, max-failures), the
 * notifications DataSource by bean name, ordered customizers, the registry's pause and resume, and
 * the modules' schemas with both migration modes.
 */
class PumpOptionsIT {

  record Slow(String id, long sleepMillis) {}

  record Patient(String id, long sleepMillis) {}

  record Typed(String id, long sleepMillis) {}

  /** Ids whose handler returned normally. */
  static final Set<String> handled = ConcurrentHashMap.newKeySet();

  /** Customizer calls, as "customizer:pump". */
  static final List<String> customized = new CopyOnWriteArrayList<>();

  /** Threads made by the customizer's thread factory. */
  static final AtomicInteger customThreads = new AtomicInteger();

  /** Connections taken from the notifications DataSource. */
  static final AtomicInteger listenConnections = new AtomicInteger();

  private static void sleep(long millis) throws InterruptedException {
    if (millis > 0) {
      Thread.sleep(millis);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    MessageTypes messageTypes() {
      return MessageTypes.builder()
          .register(Slow.class, "test.Slow")
          .register(Patient.class, "test.Patient")
          .register(Typed.class, "test.Typed")
          .build();
    }

    @Bean
    CommandPump slow() {
      return CommandPump.of(
          "slow",
          CommandHandlers.builder()
              .on(
                  Slow.class,
                  (c, ctx) -> {
                    sleep(c.sleepMillis());
                    handled.add(c.id());
                  })
              .on(
                  Typed.class,
                  (c, ctx) -> {
                    sleep(c.sleepMillis());
                    handled.add(c.id());
                  })
              .build());
    }

    @Bean
    CommandPump patient() {
      return CommandPump.of(
          "patient",
          CommandHandlers.builder()
              .on(
                  Patient.class,
                  (c, ctx) -> {
                    sleep(c.sleepMillis());
                    handled.add(c.id());
                  })
              .build());
    }
  }

  /** Two customizers, declared against their order: the order decides. */
  @Configuration(proxyBeanMethods = false)
  static class Customizers {
    @Bean
    @Order(2)
    MessagePumpCustomizer second() {
      return (name, builder) -> customized.add("second:" + name);
    }

    @Bean
    @Order(1)
    MessagePumpCustomizer first() {
      return (name, builder) -> {
        customized.add("first:" + name);
        builder.threadFactory(
            r -> {
              customThreads.incrementAndGet();
              return new Thread(r);
            });
      };
    }
  }

  private String database;
  private ApplicationContextRunner runner;

  @BeforeEach
  void newDatabase() {
    handled.clear();
    customized.clear();
    customThreads.set(0);
    listenConnections.set(0);
    database = PostgresServer.get().createDatabase();
    runner =
        new ApplicationContextRunner()
            .withConfiguration(
                AutoConfigurations.of(
                    Boots.dataSourceAutoConfiguration(), MessagePumpAutoConfiguration.class))
            .withUserConfiguration(App.class)
            .withPropertyValues(SpringTestDatabase.properties(database))
            .withPropertyValues(
                "messagepump.migrate=library",
                "messagepump.defaults.poll-interval=100ms",
                "messagepump.defaults.backoff-base=50ms",
                "messagepump.defaults.backoff-cap=200ms",
                "messagepump.defaults.shutdown-grace=5s",
                "spring.datasource.hikari.maximum-pool-size=8");
  }

  /** A DataSource on the test database that counts the connections taken from it. */
  private DataSource countingDataSource() {
    PostgresServer server = PostgresServer.get();
    return new DelegatingDataSource(
        new DriverManagerDataSource(server.jdbcUrl(database), server.user(), server.password())) {
      @Override
      public Connection getConnection() throws SQLException {
        listenConnections.incrementAndGet();
        return super.getConnection();
      }
    };
  }

  private long count(DataSource ds, String sql, Object... args) {
    return new JdbcTemplate(ds).queryForObject(sql, Long.class, args);
  }

  @Test
  void defaultsApplyToEveryPumpAndEachPumpsOwnOptionsOverrideThem() {
    runner
        .withUserConfiguration(Customizers.class)
        .withBean(
            "listenSource",
            DataSource.class,
            this::countingDataSource,
            bd ->
                ((org.springframework.beans.factory.support.AbstractBeanDefinition) bd)
                    .setDefaultCandidate(false))
        .withPropertyValues(
            "messagepump.defaults.max-failures=1",
            "messagepump.defaults.handler-timeout=300ms",
            "messagepump.pumps.patient.handler-timeout=20s",
            "messagepump.pumps.slow.handler-timeout-by-type.[test.Typed]=20s",
            "messagepump.pumps.slow.notifications-data-source=listenSource")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              DataSource ds = ctx.getBean(DataSource.class);
              TransactionalCommandQueue commands = ctx.getBean(TransactionalCommandQueue.class);
              commands.enqueue(new Slow("slow-1", 3_000));
              commands.enqueue(new Typed("typed-1", 1_000));
              commands.enqueue(new Patient("patient-1", 1_000));
              // The defaults' 300 ms timeout and max-failures=1 park the slow command at its
              // first attempt; the patient pump's own 20 s and the slow pump's timeout of
              // test.Typed let the one-second handlers finish.
              await()
                  .atMost(Duration.ofSeconds(30))
                  .until(
                      () ->
                          count(ds, "SELECT count(*) FROM commandqueue.dead_letters") == 1
                              && handled.containsAll(List.of("typed-1", "patient-1")));
              assertThat(
                      new JdbcTemplate(ds)
                          .queryForObject(
                              "SELECT message_type || ' ' || failures || ' ' || last_error"
                                  + " FROM commandqueue.dead_letters",
                              String.class))
                  .startsWith("test.Slow 1 ")
                  .contains("HandlerTimeoutException");
              assertThat(handled).doesNotContain("slow-1");
              await()
                  .atMost(Duration.ofSeconds(5))
                  .until(() -> count(ds, "SELECT count(*) FROM commandqueue.commands") == 0);
              // The slow pump listens on the named DataSource; the patient pump on the pool.
              assertThat(listenConnections.get()).isPositive();
              // Every customizer for every pump, by @Order, after the properties.
              assertThat(customized)
                  .containsExactly("first:slow", "second:slow", "first:patient", "second:patient");
              assertThat(customThreads.get()).isPositive();
            });
  }

  @Test
  void aPumpPausedThroughTheRegistryAcquiresNothingUntilResumedAcrossARestart() {
    runner.run(
        ctx -> {
          assertThat(ctx).hasNotFailed();
          DataSource ds = ctx.getBean(DataSource.class);
          PumpHandle patient = ctx.getBean(MessagePumpRegistry.class).pump("patient");
          assertThat(patient.isRunning()).isTrue();
          patient.pause();
          ctx.getBean(TransactionalCommandQueue.class).enqueue(new Patient("paused-1", 0));
          Thread.sleep(1_500); // 15 poll intervals: a running pump would have handled it
          assertThat(handled).doesNotContain("paused-1");
          assertThat(count(ds, "SELECT count(*) FROM commandqueue.commands")).isEqualTo(1);
          assertThat(patient.isPaused()).isTrue();
          assertThat(patient.health().state()).isEqualTo(PumpHealth.State.RUNNING);

          ctx.stop();
          assertThat(patient.isRunning()).isFalse();
          assertThat(patient.health().state()).isEqualTo(PumpHealth.State.STOPPED);
          ctx.start();
          assertThat(patient.isRunning()).isTrue();
          Thread.sleep(1_000);
          assertThat(handled).doesNotContain("paused-1");

          patient.resume();
          assertThat(patient.isPaused()).isFalse();
          await().atMost(Duration.ofSeconds(10)).until(() -> handled.contains("paused-1"));
        });
  }

  @Test
  void theModulesTablesLiveInTheConfiguredSchemas() {
    runner
        .withPropertyValues(
            "messagepump.commands.schema=orders_q",
            "messagepump.events.schema=orders_ev",
            "messagepump.balancer.schema=orders_bal")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              DataSource ds = ctx.getBean(DataSource.class);
              assertThat(ctx.getBean(CommandQueue.class).schema()).isEqualTo("orders_q");
              assertThat(ctx.getBean(EventStore.class).schema()).isEqualTo("orders_ev");
              assertThat(ctx.getBean(TransactionalBalancer.class).balancer("g").schema())
                  .isEqualTo("orders_bal");
              String tables =
                  "SELECT count(*) FROM information_schema.tables WHERE table_schema = ?";
              for (String schema : List.of("orders_q", "orders_ev", "orders_bal")) {
                assertThat(count(ds, tables, schema)).as(schema).isPositive();
              }
              for (String schema : List.of("commandqueue", "eventstream", "balancer")) {
                assertThat(count(ds, tables, schema)).as(schema).isZero();
              }
              ctx.getBean(TransactionalCommandQueue.class).enqueue(new Patient("schema-1", 0));
              await().atMost(Duration.ofSeconds(10)).until(() -> handled.contains("schema-1"));
              await()
                  .atMost(Duration.ofSeconds(5))
                  .until(() -> count(ds, "SELECT count(*) FROM orders_q.commands") == 0);
            });
  }

  @Test
  void flywayModeMigratesIntoTheConfiguredSchemas() {
    runner
        .withConfiguration(AutoConfigurations.of(Boots.flywayAutoConfiguration()))
        .withPropertyValues(
            "messagepump.migrate=flyway",
            "spring.flyway.enabled=true",
            "messagepump.commands.schema=fly_q",
            "messagepump.events.schema=fly_ev",
            "messagepump.balancer.schema=fly_bal")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              DataSource ds = ctx.getBean(DataSource.class);
              String history =
                  "SELECT count(*) FROM information_schema.tables"
                      + " WHERE table_schema = ? AND table_name = ?";
              assertThat(count(ds, history, "fly_q", "commandqueue_flyway_history")).isEqualTo(1);
              assertThat(count(ds, history, "fly_ev", "eventstream_flyway_history")).isEqualTo(1);
              assertThat(count(ds, history, "fly_bal", "balancer_flyway_history")).isEqualTo(1);
              ctx.getBean(TransactionalCommandQueue.class).enqueue(new Patient("flyway-1", 0));
              await().atMost(Duration.ofSeconds(10)).until(() -> handled.contains("flyway-1"));
            });
  }
}
