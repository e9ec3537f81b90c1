package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jooq.conf.ParamType;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.internal.CommandQueries;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.core.Tx;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SchemaIT {

  @Test
  @Order(1)
  void concurrentMigrationsFromSeveralProcessesApplyTheSchemaOnce(TestDatabase db)
      throws Exception {
    int processes = 4;
    ExecutorService pool = Executors.newFixedThreadPool(processes);
    CountDownLatch start = new CountDownLatch(1);
    List<CompletableFuture<Integer>> runs = new ArrayList<>();
    for (int i = 0; i < processes; i++) {
      DataSource ds = db.newDataSource("migrator-" + i, 3);
      runs.add(
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  start.await();
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
                return CommandOperations.of(ds).migrate();
              },
              pool));
    }
    start.countDown();
    List<Integer> applied = new ArrayList<>();
    for (CompletableFuture<Integer> r : runs) {
      applied.add(r.get(120, TimeUnit.SECONDS));
    }
    pool.shutdown();
    // V1, V2 (paused_types), V3 (schedules), V4 (leases), V5 (priorities) and V6 (key modes,
    // history), each applied once whichever process won.
    assertThat(applied.stream().mapToInt(Integer::intValue).sum()).isEqualTo(6);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM commandqueue.commandqueue_flyway_history WHERE success AND version = '1'"))
        .isEqualTo(1);
    assertThat(CommandOperations.of(db.dataSource()).migrate()).isZero();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'commandqueue'"))
        // commands, idempotency_keys, dead_letters, paused_types, schedules, command_history and
        // Flyway's history
        .isEqualTo(7);
  }

  @Test
  @Order(2)
  void acquireIsOneIndexScanPerTypeAndDoesNotGrowWithTheBacklog(TestDatabase db) throws Exception {
    CommandOperations.of(db.dataSource()).migrate();
    List<String> one = List.of("orders.PlaceOrder");
    List<String> three = List.of("orders.PlaceOrder", "orders.ShipOrder", "billing.ChargeCard");
    backlog(db, 1_000);
    long smallOne = bufferHits(db, one);
    long smallThree = bufferHits(db, three);
    backlog(db, 20_000);
    db.execute("ANALYZE commandqueue.commands");
    String plan = explain(db, three, false);
    assertThat(plan)
        .contains("Index Scan using commands_ranked")
        .contains("LockRows")
        .contains("claim_rank <= statement_timestamp()")
        .contains("deliver_at <= statement_timestamp()")
        .doesNotContain("Seq Scan")
        .doesNotContain("Sort");
    assertThat(explain(db, one, false)).contains("commands_ranked").doesNotContain("Seq Scan");
    // The claim deletes the locked ids by primary key: never a scan of the whole table.
    String claim = explainClaim(db, three);
    assertThat(claim)
        .contains("commands_pkey")
        .contains("commands_ranked")
        .doesNotContain("Seq Scan");
    long bigOne = bufferHits(db, one);
    long bigThree = bufferHits(db, three);
    System.out.println(
        "PLAN\n" + plan + "\nhits " + smallOne + " " + smallThree + " " + bigOne + " " + bigThree);
    // 21,000 due commands per type: the scans still read only the heads of the index.
    assertThat(bigOne).isLessThan(Math.max(50, smallOne * 3));
    assertThat(bigThree).isLessThan(Math.max(100, smallThree * 3));
  }

  private static void backlog(TestDatabase db, int perType) {
    db.execute(
        "INSERT INTO commandqueue.commands (message_id, message_type, payload, deliver_at)"
            + " SELECT gen_random_uuid(), t, '\\x00'::bytea, clock_timestamp() - interval '1 hour'"
            + " + g * interval '1 millisecond'"
            + " FROM generate_series(1, "
            + perType
            + ") g, unnest(ARRAY['orders.PlaceOrder','orders.ShipOrder','billing.ChargeCard',"
            + "'other.Unhandled']) t");
    // Delayed commands too: they must not be scanned either.
    db.execute(
        "INSERT INTO commandqueue.commands (message_id, message_type, payload, deliver_at)"
            + " SELECT gen_random_uuid(), 'orders.PlaceOrder', '\\x00'::bytea,"
            + " clock_timestamp() + interval '1 day' FROM generate_series(1, "
            + perType
            + ")");
  }

  private static long bufferHits(TestDatabase db, List<String> types) throws Exception {
    String plan = explain(db, types, true);
    var m = java.util.regex.Pattern.compile("\"Shared Hit Blocks\": (\\d+)").matcher(plan);
    assertThat(m.find()).as(plan).isTrue();
    long hits = Long.parseLong(m.group(1));
    var r = java.util.regex.Pattern.compile("\"Shared Read Blocks\": (\\d+)").matcher(plan);
    if (r.find()) {
      hits += Long.parseLong(r.group(1));
    }
    return hits;
  }

  private static String explainClaim(TestDatabase db, List<String> types) throws Exception {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      // The statement the driver runs, with its bind values.
      CommandQueries.ClaimStatement claim =
          new CommandQueries.ClaimStatement(CommandTables.defaults(), types);
      StringBuilder out = new StringBuilder();
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN (COSTS OFF) " + claim.sql(4))) {
        claim.bind(ps, 0);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            out.append(rs.getString(1)).append('\n');
          }
        }
      } finally {
        c.rollback();
      }
      return out.toString();
    }
  }

  private static String explain(TestDatabase db, List<String> types, boolean analyze)
      throws Exception {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      String sql =
          CommandQueries.acquire(Tx.of(c).dsl(), CommandTables.defaults(), types, 4)
              .getSQL(ParamType.INLINED);
      String explain =
          analyze ? "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " : "EXPLAIN (COSTS OFF) ";
      StringBuilder out = new StringBuilder();
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(explain + sql)) {
        while (rs.next()) {
          out.append(rs.getString(1)).append('\n');
        }
      } finally {
        c.rollback();
      }
      return out.toString();
    }
  }
}
