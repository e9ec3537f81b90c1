package org.messagepump.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.Schedule;
import org.messagepump.core.MessageTypes;
import org.messagepump.spring.boot.internal.CommandJobs;
import org.messagepump.testkit.PostgresServer;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The command queue's jobs from properties, over a real PostgreSQL: {@code Schedule} beans defined
 * and fired by the scheduler, the history kept, the retention job purging old dead letters, and a
 * bad option refused at start-up naming its property.
 */
class CommandJobsIT {

  record Tick(String from) {}

  record Doomed(String id) {}

  static final Set<String> ticks = ConcurrentHashMap.newKeySet();

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    MessageTypes messageTypes() {
      return MessageTypes.builder()
          .register(Tick.class, "test.Tick")
          .register(Doomed.class, "test.Doomed")
          .build();
    }

    @Bean
    CommandPump jobs() {
      return CommandPump.of(
          "jobs",
          CommandHandlers.builder()
              .on(Tick.class, (c, ctx) -> ticks.add(ctx.envelope().messageId().toString()))
              .on(
                  Doomed.class,
                  (c, ctx) -> {
                    throw new IllegalStateException("doomed " + c.id());
                  })
              .build());
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Schedules {
    @Bean
    Schedule everySecond() {
      return Schedule.every("every-second", Duration.ofSeconds(1), new Tick("schedule"));
    }
  }

  private ApplicationContextRunner runner;

  @BeforeEach
  void newDatabase() {
    ticks.clear();
    String database = PostgresServer.get().createDatabase();
    runner =
        new ApplicationContextRunner()
            .withConfiguration(
                AutoConfigurations.of(
                    org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration.class,
                    MessagePumpAutoConfiguration.class))
            .withUserConfiguration(App.class)
            .withPropertyValues(SpringTestDatabase.properties(database))
            .withPropertyValues(
                "messagepump.migrate=library",
                "messagepump.defaults.poll-interval=100ms",
                "messagepump.defaults.max-failures=1");
  }

  private static long count(DataSource ds, String sql) {
    return new JdbcTemplate(ds).queryForObject(sql, Long.class);
  }

  @Test
  void scheduleBeansAreStoredAndFiredAndTheHistoryKeepsTheirCommands() {
    runner
        .withUserConfiguration(Schedules.class)
        .withPropertyValues(
            "messagepump.commands.history=true",
            "messagepump.commands.scheduler.poll-interval=100ms")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              CommandJobs jobs = ctx.getBean(CommandJobs.class);
              assertThat(jobs.runsScheduler()).isTrue();
              assertThat(jobs.runsRetention()).isFalse();
              CommandQueue queue = ctx.getBean(CommandQueue.class);
              assertThat(queue.operations().schedules().find("every-second")).isPresent();
              await().atMost(Duration.ofSeconds(20)).until(() -> ticks.size() >= 1);
              await()
                  .atMost(Duration.ofSeconds(10))
                  .until(() -> !queue.operations().history(null, 10).isEmpty());
              assertThat(queue.operations().history(null, 10))
                  .allSatisfy(h -> assertThat(h.type()).isEqualTo("test.Tick"));
              ctx.stop();
              assertThat(jobs.isRunning()).isFalse();
              assertThat(jobs.scheduler()).isNull();
            });
  }

  @Test
  void withoutScheduleBeansTheSchedulerRunsOnlyWhenEnabled() {
    runner.run(
        ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBean(CommandJobs.class).runsScheduler()).isFalse();
          assertThat(ctx.getBean(CommandQueue.class).keepsHistory()).isFalse();
        });
    runner
        .withPropertyValues("messagepump.commands.scheduler.enabled=true")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx.getBean(CommandJobs.class).scheduler()).isNotNull();
              assertThat(ctx.getBean(CommandJobs.class).scheduler().isRunning()).isTrue();
            });
    runner
        .withUserConfiguration(Schedules.class)
        .withPropertyValues("messagepump.commands.scheduler.enabled=false")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              // Defined, not fired here.
              assertThat(
                      ctx.getBean(CommandQueue.class).operations().schedules().find("every-second"))
                  .isPresent();
              assertThat(ctx.getBean(CommandJobs.class).runsScheduler()).isFalse();
            });
  }

  @Test
  void theRetentionJobPurgesDeadLettersPastTheirAge() {
    runner
        .withPropertyValues(
            "messagepump.commands.retention.enabled=true",
            "messagepump.commands.retention.dead-letter-age=1s",
            "messagepump.commands.retention.interval=300ms")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx.getBean(CommandJobs.class).retention().isRunning()).isTrue();
              DataSource ds = ctx.getBean(DataSource.class);
              ctx.getBean(TransactionalCommandQueue.class).enqueue(new Doomed("d-1"));
              await()
                  .atMost(Duration.ofSeconds(10))
                  .until(() -> count(ds, "SELECT count(*) FROM commandqueue.dead_letters") == 1);
              await()
                  .atMost(Duration.ofSeconds(15))
                  .until(() -> count(ds, "SELECT count(*) FROM commandqueue.dead_letters") == 0);
            });
  }

  @Test
  void aBadJobOptionFailsStartUpNamingItsProperty() {
    runner
        .withPropertyValues(
            "messagepump.commands.retention.enabled=true",
            "messagepump.commands.retention.batch-size=0")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining(
                        "IllegalArgumentException: messagepump.commands.retention: batchSize"));
    runner
        .withPropertyValues(
            "messagepump.commands.scheduler.enabled=true",
            "messagepump.commands.scheduler.poll-interval=0s")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("messagepump.commands.scheduler: pollInterval"));
  }
}
