package org.messagepump.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
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
    db.execute(TinyTableDriver.SCHEMA);
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

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
