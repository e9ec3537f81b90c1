package org.messagepump.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.PumpException;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * {@link Migrations}: concurrent callers serialize, the migrations apply once, the lock is freed.
 */
@ExtendWith(PostgresExtension.class)
class MigrationsIT {

  private static final String LOCATION = "classpath:db/migrationsit";
  private static final String HISTORY = "migrationsit_flyway_history";

  private static int migrate(DataSource ds, String schema) {
    return Migrations.migrate(ds, schema, HISTORY, LOCATION, Map.of("schema", schema));
  }

  @Test
  void concurrentCallsOfSeveralProcessesAllSucceedAndApplyTheMigrationsOnce(TestDatabase db)
      throws Exception {
    int processes = 3;
    ExecutorService threads = Executors.newFixedThreadPool(processes);
    CountDownLatch start = new CountDownLatch(1);
    List<CompletableFuture<Integer>> runs = new ArrayList<>();
    try {
      for (int i = 0; i < processes; i++) {
        // One pool per "process": a lock held in one pool is invisible to the others' sessions.
        DataSource ds = db.newDataSource("migrationsit-" + i, 3);
        runs.add(
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    start.await();
                  } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                  }
                  return migrate(ds, "concurrent");
                },
                threads));
      }
      start.countDown();
      List<Integer> applied = new ArrayList<>();
      for (CompletableFuture<Integer> r : runs) {
        applied.add(r.get(120, TimeUnit.SECONDS)); // none failed (a race would throw here)
      }
      // One caller applied both migrations; the others, serialized after it, found none to apply.
      assertThat(applied).containsExactlyInAnyOrder(2, 0, 0);
    } finally {
      threads.shutdownNow();
    }
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM concurrent."
                    + HISTORY
                    + " WHERE success AND version IS NOT NULL"))
        .isEqualTo(2);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'concurrent'"))
        .isEqualTo(3); // first, second, history
    assertThat(migrate(db.dataSource(), "concurrent")).isZero();
    assertThat(advisoryLocksHeld(db)).isZero();
  }

  @Test
  void eachSchemaHasItsOwnHistory(TestDatabase db) {
    assertThat(migrate(db.dataSource(), "tenant_one")).isEqualTo(2);
    assertThat(migrate(db.dataSource(), "tenant_two")).isEqualTo(2);
    assertThat(migrate(db.dataSource(), "tenant_one")).isZero();
  }

  @Test
  void aFailedMigrationThrowsAndReleasesTheLock(TestDatabase db) {
    DataSource ds = db.newDataSource("migrationsit-broken", 3);
    assertThatThrownBy(
            () ->
                Migrations.migrate(
                    ds,
                    "broken",
                    HISTORY,
                    "classpath:db/migrationsit_broken",
                    Map.of("schema", "broken")))
        .isInstanceOf(PumpException.class)
        .hasMessageContaining("migrating schema broken failed");
    // The pool keeps its connections open: a lock not unlocked would still be held by one.
    assertThat(advisoryLocksHeld(db)).isZero();
    assertThat(migrate(db.newDataSource("migrationsit-after", 3), "after_broken")).isEqualTo(2);
  }

  @Test
  void schemaAndHistoryTableMustBePlainLowerCaseIdentifiers(TestDatabase db) {
    DataSource ds = db.dataSource();
    for (String bad : List.of("", "Upper", "1digit", "with-dash", "x\"; DROP TABLE y; --")) {
      assertThatThrownBy(() -> Migrations.migrate(ds, bad, HISTORY, LOCATION, Map.of()))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
      assertThatThrownBy(() -> Migrations.migrate(ds, "ok", bad, LOCATION, Map.of()))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("historyTable");
    }
    assertThatThrownBy(() -> Migrations.migrate(ds, "ok", HISTORY, " ", Map.of()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Migrations.migrate(ds, null, HISTORY, LOCATION, Map.of()))
        .isInstanceOf(NullPointerException.class);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'ok'"))
        .isZero();
  }

  private static long advisoryLocksHeld(TestDatabase db) {
    return db.queryLong(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database ="
            + " (SELECT oid FROM pg_database WHERE datname = current_database())");
  }
}
