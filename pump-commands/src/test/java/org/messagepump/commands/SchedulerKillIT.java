package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Three scheduler JVMs compete for the ticks; one of them is killed with SIGKILL while it is inside
 * a check's transaction (its insert of a tick's command is running), again and again. Each tick is
 * still enqueued exactly once and none is lost. Runs with the chaos suite ({@code -Pchaos}), as the
 * other process-kill scenarios do; ScheduleIT and SchedulerIT cover the scheduler in the default
 * build.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class SchedulerKillIT {

  private static final int KILLS = 3;

  @Test
  void killingASchedulerMidTickNeitherDoublesNorLosesTicks(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    CommandOperations.of(ds).migrate();
    // Every scheduled insert takes 300 ms, so that a check spends most of its time mid-tick.
    db.execute(
        "CREATE FUNCTION public.slow_tick() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " IF NEW.headers ? 'messagepump-schedule' THEN PERFORM pg_sleep(0.3); END IF;"
            + " RETURN NEW; END $$");
    db.execute(
        "CREATE TRIGGER slow_tick BEFORE INSERT ON commandqueue.commands"
            + " FOR EACH ROW EXECUTE FUNCTION public.slow_tick()");
    CommandQueue queue = CommandQueue.create(ds, Fixtures.CODEC);
    queue.defineSchedule(
        Schedule.every("k", Duration.ofSeconds(1), new PlaceOrder("k"))
            .withMisfire(MisfirePolicy.catchUp(100).withGrace(Duration.ofMinutes(5))));

    Path logs = Files.createTempDirectory("scheduler-kill");
    List<Process> nodes = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        nodes.add(start(db, "sched-node-" + i, logs));
      }
      int killed = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (killed < KILLS && System.nanoTime() < deadline) {
        // Wait until a node is inside a tick's insert, then kill that node there.
        String[] found = midTick(ds);
        if (found == null) {
          Thread.sleep(5);
          continue;
        }
        String app = found[0];
        int victim = Integer.parseInt(app.substring("sched-node-".length()));
        nodes.get(victim).destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        killed++;
        // Its backend ends (and rolls the check back) when it next talks to the dead client.
        await()
            .atMost(Duration.ofSeconds(30))
            .until(
                () ->
                    Fixtures.count(
                            ds,
                            "SELECT count(*) FROM pg_stat_activity WHERE pid = ?",
                            Integer.parseInt(found[1]))
                        == 0);
        nodes.set(victim, start(db, app, logs));
      }
      assertThat(killed).as("kills mid-tick").isEqualTo(KILLS);
      long firedAtLastKill =
          Fixtures.count(ds, "SELECT fired FROM commandqueue.schedules WHERE name = 'k'");
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  Fixtures.count(ds, "SELECT fired FROM commandqueue.schedules WHERE name = 'k'")
                      >= firedAtLastKill + 3);
    } finally {
      for (Process p : nodes) {
        p.getOutputStream().close();
      }
      for (Process p : nodes) {
        if (!p.waitFor(15, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor(15, TimeUnit.SECONDS);
        }
      }
    }
    List<Instant> ticks = new ArrayList<>();
    for (String t : ScheduleIT.ticks(ds, "k")) {
      ticks.add(Instant.parse(t));
    }
    assertThat(ticks).doesNotHaveDuplicates();
    for (int i = 1; i < ticks.size(); i++) {
      assertThat(Duration.between(ticks.get(i - 1), ticks.get(i))).isEqualTo(Duration.ofSeconds(1));
    }
    assertThat((long) ticks.size())
        .isEqualTo(Fixtures.count(ds, "SELECT fired FROM commandqueue.schedules WHERE name = 'k'"));
  }

  /** The application name and backend pid of a node whose tick insert is running now, or null. */
  private static String[] midTick(DataSource ds) throws java.sql.SQLException {
    try (var c = ds.getConnection();
        var st =
            c.prepareStatement(
                "SELECT application_name, pid FROM pg_stat_activity WHERE application_name LIKE"
                    + " 'sched-node-%' AND state = 'active' AND query ILIKE 'insert into%commands%'"
                    + " LIMIT 1");
        var rs = st.executeQuery()) {
      return rs.next() ? new String[] {rs.getString(1), rs.getString(2)} : null;
    }
  }

  private static Process start(TestDatabase db, String name, Path logs) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb =
        new ProcessBuilder(
            java,
            "-Xmx128m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-cp",
            System.getProperty("java.class.path"),
            SchedulerNodeMain.class.getName(),
            db.jdbcUrl(),
            db.server().user(),
            db.server().password(),
            name);
    pb.redirectErrorStream(true);
    pb.redirectOutput(ProcessBuilder.Redirect.appendTo(logs.resolve(name + ".log").toFile()));
    return pb.start();
  }
}
