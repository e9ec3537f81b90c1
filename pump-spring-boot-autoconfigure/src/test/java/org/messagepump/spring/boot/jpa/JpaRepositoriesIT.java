package org.messagepump.spring.boot.jpa;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.messagepump.spring.boot.SpringTestDatabase;
import org.messagepump.spring.boot.TransactionalCommandQueue;
import org.messagepump.spring.boot.jpa.LedgerApp.Post;
import org.messagepump.spring.boot.jpa.LedgerApp.Via;
import org.messagepump.testkit.PostgresServer;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * JPA inside handlers, with Boot's Hibernate auto-configuration (a {@link JpaTransactionManager})
 * on a real PostgreSQL: Spring Data JPA repositories and {@code @Transactional} JPA services join
 * the delivery's transaction, on the delivery's connection.
 */
@SpringBootTest(
    classes = LedgerApp.class,
    properties = {
      "messagepump.migrate=library",
      "messagepump.pumps.ledger.workers=2",
      "messagepump.pumps.ledger.poll-interval=100ms",
      "messagepump.pumps.ledger.backoff-base=50ms",
      "messagepump.pumps.ledger.backoff-cap=200ms",
      "spring.sql.init.mode=always",
      "spring.sql.init.schema-locations=classpath:jpa-schema.sql",
      "spring.jpa.hibernate.ddl-auto=none",
      "spring.jpa.open-in-view=false",
      "spring.flyway.enabled=false",
      "spring.datasource.hikari.maximum-pool-size=6"
    })
class JpaRepositoriesIT {

  static final String DATABASE = PostgresServer.get().createDatabase();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    SpringTestDatabase.register(registry, DATABASE);
  }

  @Autowired JdbcTemplate jdbc;
  @Autowired TransactionalCommandQueue commands;
  @Autowired EntryRepository entries;
  @Autowired PlatformTransactionManager transactionManager;

  private Integer attemptWritten(String id) {
    return jdbc
        .query("SELECT attempt FROM entries WHERE id = ?", (rs, i) -> rs.getInt(1), id)
        .stream()
        .findFirst()
        .orElse(null);
  }

  private long audited(String id) {
    return jdbc.queryForObject("SELECT count(*) FROM audit WHERE entry_id = ?", Long.class, id);
  }

  private long queued(String id) {
    return jdbc.queryForObject(
        "SELECT count(*) FROM commandqueue.commands"
            + " WHERE convert_from(payload, 'UTF8')::jsonb ->> 'id' = ?",
        Long.class,
        id);
  }

  private void handled(String id) {
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> attemptWritten(id) != null && queued(id) == 0);
  }

  @Test
  void theTransactionManagerIsJpas() {
    // What the other tests are about: without the delivery's EntityManager bound, this manager
    // would begin a transaction of its own on another pooled connection.
    assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);
  }

  @Test
  void aRepositorySaveCommitsWithTheDelivery() {
    commands.enqueue(new Post("saved", 10, Via.REPOSITORY));
    handled("saved");
    assertThat(attemptWritten("saved")).isEqualTo(1);
    assertThat(entries.findById("saved")).get().extracting(Entry::getAmount).isEqualTo(10);
  }

  @Test
  void aHandlerThatSavesThenThrowsLeavesNothingAndIsRetried() {
    commands.enqueue(new Post("thrown", 20, Via.REPOSITORY_THEN_THROW));
    handled("thrown");
    // Attempt 1 flushed its entry (the JdbcTemplate on the same connection saw it), left another
    // pending, and threw: both were undone, the flushed one by the delivery's savepoint. The row
    // is attempt 2's.
    assertThat(LedgerApp.attempts.get("thrown").get()).isEqualTo(2);
    assertThat(attemptWritten("thrown")).isEqualTo(2);
    assertThat(LedgerApp.seenByJdbcTemplate.get("thrown")).isEqualTo(1);
    // Attempt 2's pending entry was flushed when its handler returned; attempt 1's was discarded.
    assertThat(attemptWritten("thrown-pending")).isEqualTo(2);
  }

  @Test
  void aMandatoryServiceUsingTheRepositoryJoinsTheDeliverysTransaction() {
    commands.enqueue(new Post("mandatory", 30, Via.MANDATORY_SERVICE));
    handled("mandatory");
    assertThat(attemptWritten("mandatory")).isEqualTo(1);
    // saveAndFlush inside the MANDATORY method wrote it, but did not commit it: another connection
    // could not see it while the handler ran. It committed with the delivery's bookkeeping.
    assertThat(LedgerApp.visibleOutsideDuringHandler.get("mandatory")).isZero();
  }

  @Test
  void aFailedInnerJpaMethodFailsTheDeliveryEvenWhenTheHandlerSwallowsIt() {
    commands.enqueue(new Post("swallowed", 35, Via.SWALLOWED_FAILURE));
    handled("swallowed");
    // Attempt 1 caught the inner failure and returned normally; the rollback-only mark failed it,
    // so neither the inner entry nor its own survived. Attempt 2 committed.
    assertThat(LedgerApp.attempts.get("swallowed").get()).isEqualTo(2);
    assertThat(attemptWritten("swallowed")).isEqualTo(2);
    assertThat(attemptWritten("swallowed-inner")).isNull();
  }

  @Test
  void anEntityAndAJdbcTemplateWriteCommitTogether() {
    commands.enqueue(new Post("mixed", 40, Via.WITH_JDBC_TEMPLATE));
    handled("mixed");
    assertThat(LedgerApp.seenByJdbcTemplate.get("mixed")).isEqualTo(1);
    assertThat(audited("mixed")).isEqualTo(1);
    assertThat(LedgerApp.visibleOutsideDuringHandler.get("mixed")).isZero();
  }

  @Test
  void anEntityAndAJdbcTemplateWriteOfAFailedAttemptAreBothUndone() {
    commands.enqueue(new Post("mixed-failed", 50, Via.WITH_JDBC_TEMPLATE_THEN_THROW));
    handled("mixed-failed");
    assertThat(LedgerApp.attempts.get("mixed-failed").get()).isEqualTo(2);
    assertThat(attemptWritten("mixed-failed")).isEqualTo(2);
    // One audit row, attempt 2's: attempt 1's went with its entry.
    assertThat(
            jdbc.queryForList(
                "SELECT attempt FROM audit WHERE entry_id = ?", Integer.class, "mixed-failed"))
        .containsExactly(2);
  }

  @Test
  void theEntityManagerRunsOnTheDeliverysConnectionAndTakesNoOther() {
    commands.enqueue(new Post("connections", 60, Via.CONNECTIONS));
    handled("connections");
    // The same server backend: the EntityManager's native query ran on the delivery's connection.
    assertThat(LedgerApp.observed.get("jpaPid")).isEqualTo(LedgerApp.observed.get("jdbcPid"));
    assertThat(LedgerApp.observed.get("entries")).isNotEqualTo(0L);
    // The repository's save, flush and count and the native query took no connection from the
    // pool: no second connection per delivery.
    assertThat(LedgerApp.observed.get("borrowed")).isEqualTo(0);
  }
}
