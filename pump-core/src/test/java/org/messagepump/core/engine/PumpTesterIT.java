package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** The tester runs the pump's real poll path and reports each delivery's fate. */
@ExtendWith(PostgresExtension.class)
class PumpTesterIT {

  private TestDatabase db;

  @BeforeEach
  void schema(TestDatabase db) {
    this.db = db;
    db.execute("DROP TABLE IF EXISTS work, work_parked, once");
    db.execute(TinyTable.SCHEMA);
    db.execute(
        "CREATE TABLE once (k int, CONSTRAINT once_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)");
    db.execute("INSERT INTO once VALUES (1)");
    db.execute("INSERT INTO work (body) SELECT 'job ' || g FROM generate_series(1, 5) g");
  }

  @Test
  void reportsHandledFailedAndParkedAndDrains() {
    PumpTester tester =
        PumpTester.builder(
                db.dataSource(),
                new TinyTableDriver(
                    (tx, id, body) -> {
                      if (id == 3) {
                        throw new IllegalStateException("three fails");
                      }
                      return Outcome.HANDLED;
                    }))
            .batchSize(5)
            .maxFailures(2)
            .backoff(Duration.ofMillis(1), Duration.ofMillis(1))
            .build();
    List<PumpTester.Result> first = tester.runOnce();
    assertThat(first)
        .extracting(PumpTester.Result::kind)
        .containsExactly(
            PumpTester.Kind.HANDLED,
            PumpTester.Kind.HANDLED,
            PumpTester.Kind.FAILED,
            PumpTester.Kind.HANDLED,
            PumpTester.Kind.HANDLED);
    assertThat(first.get(2).cause()).hasMessage("three fails");
    sleep(20);
    List<PumpTester.Result> rest = tester.drainUntilIdle();
    assertThat(rest).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.PARKED);
    assertThat(db.queryLong("SELECT count(*) FROM work")).isZero();
    assertThat(db.queryLong("SELECT failures FROM work_parked")).isEqualTo(2);
  }

  @Test
  void theRetryPolicyOfTheDeliverysTypeDecidesWhenItParks() {
    db.execute("DELETE FROM work WHERE id > 2");
    PumpTester tester =
        PumpTester.builder(
                db.dataSource(),
                new TinyTableDriver(
                    (tx, id, body) -> {
                      throw id == 1
                          ? new IllegalArgumentException("malformed")
                          : new IllegalStateException("down");
                    }))
            .batchSize(5)
            .retryPolicy(RetryPolicy.retryForever())
            .retryPolicy(
                "work",
                RetryPolicy.defaults()
                    .withMaxAttempts(2)
                    .withFixedDelay(Duration.ofMillis(1))
                    .withNonRetryable(IllegalArgumentException.class))
            .build();
    // The type's policy, not the pump's retryForever: 1 parks at once, 2 at its second failure.
    assertThat(tester.runOnce())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.PARKED, PumpTester.Kind.FAILED);
    sleep(20);
    assertThat(tester.drainUntilIdle())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.PARKED);
    assertThat(db.queryLong("SELECT count(*) FROM work")).isZero();
    assertThat(db.queryLong("SELECT failures FROM work_parked WHERE id = 1")).isEqualTo(1);
    assertThat(db.queryLong("SELECT failures FROM work_parked WHERE id = 2")).isEqualTo(2);
  }

  @Test
  void aCommitThatFailsAbandonsTheBatchThenTheCulpritFailsAlone() {
    PumpTester tester =
        PumpTester.builder(
                db.dataSource(),
                new TinyTableDriver(
                    (tx, id, body) -> {
                      if (id == 2) {
                        tx.dsl().execute("INSERT INTO once VALUES (1)");
                      }
                      return Outcome.HANDLED;
                    }))
            .batchSize(5)
            .maxFailures(2)
            .backoff(Duration.ofMillis(1), Duration.ofMillis(1))
            .build();
    assertThat(tester.runOnce()).hasSize(5).allMatch(r -> r.kind() == PumpTester.Kind.ABANDONED);
    // Retried one per transaction, deferred constraints checked per delivery: only 2 fails.
    assertThat(tester.runOnce())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.HANDLED);
    List<PumpTester.Result> second = tester.runOnce();
    assertThat(second).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.FAILED);
    assertThat(second.get(0).messageId()).isEqualTo("2");
    sleep(20);
    assertThat(tester.drainUntilIdle())
        .extracting(PumpTester.Result::kind)
        .containsOnly(PumpTester.Kind.HANDLED, PumpTester.Kind.PARKED)
        .contains(PumpTester.Kind.PARKED);
    assertThat(db.queryLong("SELECT count(*) FROM work_parked WHERE id = 2")).isOne();
  }

  @Test
  void theTesterTakesThePumpsOptionsAsOneValue() {
    db.execute("DELETE FROM work WHERE id > 2");
    PumpOptions options =
        PumpOptions.defaults()
            .withBatchSize(2)
            .withMaxFailures(1)
            .withRetryPolicy("other", RetryPolicy.retryForever());
    PumpTester tester =
        PumpTester.builder(
                db.dataSource(),
                new TinyTableDriver(
                    (tx, id, body) -> {
                      throw new IllegalStateException("fails " + id);
                    }))
            .options(options)
            .build();
    // One poll takes both rows (batch size 2); the first failure parks each (max failures 1).
    assertThat(tester.runOnce())
        .extracting(PumpTester.Result::kind)
        .containsExactly(PumpTester.Kind.PARKED, PumpTester.Kind.PARKED);
    assertThat(db.queryLong("SELECT count(*) FROM work_parked")).isEqualTo(2);
    assertThatThrownBy(
            () -> PumpTester.builder(db.dataSource(), new TinyTableDriver(null)).options(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("options");
  }

  @Test
  void aHandlerTimeoutStopsAHandlerStuckInAStatementAndCountsItsFailure() {
    db.execute("DELETE FROM work WHERE id > 1");
    PumpTester tester =
        PumpTester.builder(
                db.dataSource(),
                new TinyTableDriver(
                    (tx, id, body) -> {
                      tx.dsl().execute("UPDATE work SET body = 'half written' WHERE id = 1");
                      tx.dsl().execute("SELECT pg_sleep(60)"); // deaf to interrupts
                      return Outcome.HANDLED;
                    }))
            .handlerTimeout(Duration.ofMillis(300))
            .maxFailures(2)
            .backoff(Duration.ofMillis(1), Duration.ofMillis(1))
            .build();
    long start = System.nanoTime();
    List<PumpTester.Result> first = tester.runOnce();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
    assertThat(first).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.FAILED);
    assertThat(first.get(0).cause()).isInstanceOf(HandlerTimeoutException.class);
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
    // Nothing the handler wrote committed; its failure is counted.
    assertThat(db.queryLong("SELECT count(*) FROM work WHERE body = 'half written'")).isZero();
    assertThat(db.queryLong("SELECT failures FROM work WHERE id = 1")).isEqualTo(1);
    assertThatThrownBy(
            () ->
                PumpTester.builder(db.dataSource(), new TinyTableDriver((tx, id, body) -> null))
                    .handlerTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerTimeout");
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
