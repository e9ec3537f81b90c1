package org.messagepump.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** The bench's baseline in a JVM of its own: it runs on request, and ends with the bench. */
@ExtendWith(PostgresExtension.class)
class BaselineProcessIT {

  private static final String BACKENDS =
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pump-bench-baseline'"
          + " AND datname = current_database()";

  @Test
  void runsTheBaselineOnItsOwnConnectionsAndEndsWithTheBench(TestDatabase db) throws Exception {
    HikariDataSource bench = db.newDataSource("bench", 2);
    try (BaselineProcess process = BaselineProcess.start(bench, true)) {
      double[] run = process.run(3, 200, true);
      assertThat(run[0]).as("deliveries/s").isPositive();
      assertThat(run).hasSize(4);
      assertThat(db.queryLong("SELECT count(*) FROM bench.baseline")).as("rows left").isZero();
      assertThat(db.queryLong(BACKENDS)).as("the process's own connections").isPositive();
      double[] again = process.run(1, 50, false);
      assertThat(again[0]).isPositive();
    }
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (db.queryLong(BACKENDS) > 0 && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(db.queryLong(BACKENDS)).as("connections left by the ended process").isZero();
  }

  @Test
  void aDatabaseTheProcessCannotUseIsAnErrorThatNamesIt(TestDatabase db) {
    try (HikariDataSource unstarted = new HikariDataSource()) {
      unstarted.setJdbcUrl(db.server().jdbcUrl("no_such_database"));
      unstarted.setUsername(db.server().user());
      unstarted.setPassword(db.server().password());
      assertThatThrownBy(() -> BaselineProcess.start(unstarted, true))
          .isInstanceOf(CliException.class)
          .hasMessageContaining("the baseline failed")
          .hasMessageContaining("no_such_database");
    }
  }
}
