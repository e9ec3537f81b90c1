package org.messagepump.spring.boot.leased;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.MessageTypes;
import org.messagepump.spring.boot.CommandPump;
import org.messagepump.spring.boot.SpringTestDatabase;
import org.messagepump.testkit.PostgresServer;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A command pump declared in lease mode in a Spring Boot application over a real PostgreSQL: no
 * delivery transaction is bound while its handler runs, the handler's JdbcTemplate write is a
 * Spring transaction of its own (committed, visible to others, before the handler returns), the
 * lease outlives its length by heartbeats, and the command's completion is recorded after.
 */
@SpringBootTest(
    classes = LeasedPumpIT.ExportsApp.class,
    properties = {
      "messagepump.migrate=library",
      "messagepump.pumps.exports.workers=2",
      "messagepump.pumps.exports.poll-interval=100ms",
      "messagepump.pumps.exports.shutdown-grace=5s",
      "spring.sql.init.mode=never",
      "spring.flyway.enabled=false",
      "spring.datasource.hikari.connection-timeout=2000",
      "spring.datasource.hikari.maximum-pool-size=6"
    })
class LeasedPumpIT {

  static final String DATABASE = PostgresServer.get().createDatabase();

  /**
   * One lease, which a handler running 4 s outlives twice over: 2 s, a beat every 667 ms. With the
   * shortest lease, 1 s, a machine at load 28 on 2 cores once delayed a beat past the lease's end
   * (the lease was counted lost), which is not what this test is about.
   */
  static final Duration LEASE = Duration.ofSeconds(2);

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    SpringTestDatabase.register(registry, DATABASE);
  }

  /** A long-running command. */
  record RunExport(String id, long millis) {}

  /** What the handler saw while it ran. */
  record Seen(boolean springTransactionBound, long committedRowsSeenOutside, long token) {}

  static final Map<String, Seen> seen = new ConcurrentHashMap<>();
  static final CountDownLatch handled = new CountDownLatch(1);

  @SpringBootConfiguration
  @EnableAutoConfiguration(
      excludeName = {
        "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
        "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration",
        // The same on Spring Boot 3.
        "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
        "org.springframework.boot.autoconfigure.data.jpa.JpaRepositoriesAutoConfiguration"
      })
  static class ExportsApp {

    @Bean
    MessageTypes messageTypes() {
      return MessageTypes.builder().register(RunExport.class, "test.RunExport").build();
    }

    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }

    @Bean
    ExportService exportService(JdbcTemplate jdbc) {
      return new ExportService(jdbc);
    }

    @Bean
    CommandPump exports(ExportService service, JdbcTemplate jdbc) {
      return CommandPump.of(
          "exports",
          CommandHandlers.builder()
              .on(
                  RunExport.class,
                  (cmd, ctx) -> {
                    boolean bound = TransactionSynchronizationManager.isActualTransactionActive();
                    long token = ctx.fencingToken().orElseThrow();
                    service.record(cmd.id(), token); // commits on its own
                    long outside =
                        jdbc.queryForObject(
                            "SELECT count(*) FROM exports WHERE id = ?", Long.class, cmd.id());
                    seen.put(cmd.id(), new Seen(bound, outside, token));
                    Thread.sleep(cmd.millis()); // longer than the lease
                    handled.countDown();
                  })
              .build(),
          CommandDriverOptions.defaults().withLease(LEASE));
    }
  }

  /** Plain Spring data access: JdbcTemplate in a @Transactional method of its own. */
  static class ExportService {
    private final JdbcTemplate jdbc;

    ExportService(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    /** REQUIRES_NEW would do too: with no delivery transaction bound, REQUIRED starts one. */
    @Transactional(propagation = Propagation.REQUIRED)
    public void record(String id, long token) {
      jdbc.update(
          "INSERT INTO exports (id, token) VALUES (?, ?)"
              + " ON CONFLICT (id) DO UPDATE SET token = excluded.token"
              + " WHERE exports.token < excluded.token",
          id,
          token);
    }
  }

  @Autowired JdbcTemplate jdbc;
  @Autowired CommandQueue queue;
  @Autowired MeterRegistry meters;

  @Test
  void aLeasedPumpRunsItsHandlerInSpringTransactionsOfItsOwnAndCompletesTheCommand()
      throws Exception {
    jdbc.execute("CREATE TABLE IF NOT EXISTS exports (id text PRIMARY KEY, token bigint NOT NULL)");
    queue.enqueue(new RunExport("e-1", 2 * LEASE.toMillis()));
    // While it runs: leased, no transaction held by the pump.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                jdbc.queryForObject(
                        "SELECT count(*) FROM commandqueue.commands WHERE leased_by IS NOT NULL",
                        Long.class)
                    == 1);
    assertThat(handled.await(60, TimeUnit.SECONDS)).isTrue();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                jdbc.queryForObject("SELECT count(*) FROM commandqueue.commands", Long.class) == 0);
    Seen s = seen.get("e-1");
    assertThat(s.springTransactionBound()).as("a delivery transaction bound to Spring").isFalse();
    assertThat(s.committedRowsSeenOutside())
        .as("the @Transactional write committed before the handler returned")
        .isEqualTo(1);
    assertThat(jdbc.queryForObject("SELECT token FROM exports WHERE id = 'e-1'", Long.class))
        .isEqualTo(s.token());
    assertThat(jdbc.queryForObject("SELECT count(*) FROM commandqueue.dead_letters", Long.class))
        .isZero();
    // The handler ran two lease lengths: only the heartbeats kept its lease.
    assertThat(meters.get("messagepump.leases.heartbeats").tag("pump", "exports").counter().count())
        .isPositive();
    assertThat(meters.get("messagepump.leases.lost").tag("pump", "exports").counter().count())
        .isZero();
  }

  @Test
  void aLeaseOutsideItsBoundsIsRefusedWhereThePumpIsDeclared() {
    CommandHandlers none = CommandHandlers.builder().on(RunExport.class, (cmd, ctx) -> {}).build();
    CommandPump pump = CommandPump.of("exports-2", none);
    assertThat(pump.options().lease()).isEmpty();
    CommandDriverOptions options = CommandDriverOptions.defaults();
    assertThat(CommandPump.of("exports-2", none, options.withLease(Duration.ofSeconds(30))))
        .satisfies(p -> assertThat(p.options().lease()).contains(Duration.ofSeconds(30)));
    assertThatThrownBy(() -> options.withLease(Duration.ofMillis(999)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
    assertThatThrownBy(() -> options.withLease(Duration.ofHours(2)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> options.withLease(null)).isInstanceOf(IllegalArgumentException.class);
  }
}
