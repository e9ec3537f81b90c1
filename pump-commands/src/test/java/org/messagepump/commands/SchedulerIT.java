package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Schedulers at work: competing schedulers with their own connections fire each tick once; restarts
 * neither double nor lose ticks within the grace; an idle scheduler backs off.
 */
@ExtendWith(PostgresExtension.class)
class SchedulerIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private static CommandQueue queueOn(DataSource ds) {
    return CommandQueue.create(ds, Fixtures.CODEC);
  }

  /** Every tick of {@code name} enqueued once, one second apart, none missing in between. */
  private static List<Instant> assertOncePerTick(DataSource ds, String name, Duration every) {
    List<Instant> ticks = new ArrayList<>();
    for (String t : ScheduleIT.ticks(ds, name)) {
      ticks.add(Instant.parse(t));
    }
    assertThat(ticks).as(name).doesNotHaveDuplicates();
    for (int i = 1; i < ticks.size(); i++) {
      assertThat(Duration.between(ticks.get(i - 1), ticks.get(i))).as(name).isEqualTo(every);
    }
    long fired =
        Fixtures.count(ds, "SELECT fired FROM commandqueue.schedules WHERE name = ?", name);
    assertThat(ticks).as(name).hasSize((int) fired);
    return ticks;
  }

  @Test
  void threeCompetingSchedulersEnqueueEachTickOnce(TestDatabase db) {
    DataSource ds = db.dataSource();
    Schedules defining = queueOn(ds).operations().schedules();
    int count = 12;
    for (int i = 0; i < count; i++) {
      defining.define(
          Schedule.every("s" + i, Duration.ofSeconds(1), new PlaceOrder("s" + i))
              .withMisfire(MisfirePolicy.catchUp(200).withGrace(Duration.ofSeconds(30))));
    }
    // A backlog as well: half of them 40 s behind, so checks overlap on the same rows.
    for (int i = 0; i < count; i += 2) {
      ScheduleIT.rewind(ds, "s" + i, 40);
    }
    List<com.zaxxer.hikari.HikariDataSource> pools = new ArrayList<>();
    List<CommandScheduler> schedulers = new ArrayList<>();
    try {
      for (int p = 0; p < 3; p++) {
        var pool = db.newDataSource("scheduler-" + p, 3);
        pools.add(pool);
        CommandScheduler s =
            CommandScheduler.builder(queueOn(pool))
                .name("s" + p)
                .pollInterval(Duration.ofMillis(20))
                .maxIdle(Duration.ofMillis(100))
                .build();
        schedulers.add(s);
      }
      long started = System.nanoTime();
      schedulers.forEach(CommandScheduler::start);
      try {
        await()
            .atMost(Duration.ofSeconds(30))
            .until(
                () ->
                    Fixtures.count(ds, "SELECT min(fired) FROM commandqueue.schedules") >= 5
                        && Fixtures.count(
                                ds,
                                "SELECT count(*) FROM commandqueue.schedules WHERE next_fire_at"
                                    + " < clock_timestamp() - interval '2 seconds'")
                            == 0);
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        // What a slow catch-up looked like: how far each schedule was behind, and each scheduler's
        // checks, so that a failure says whether the schedulers stalled or merely lagged.
        System.out.printf(
            "competing schedulers: not caught up after %d ms, checks %s, schedules %s, load %s%n",
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
            schedulers.stream().map(CommandScheduler::checks).toList(),
            scheduleLag(ds),
            loadAverage());
        throw e;
      }
      System.out.printf(
          "competing schedulers: caught up in %d ms, checks %s%n",
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
          schedulers.stream().map(CommandScheduler::checks).toList());
    } finally {
      schedulers.forEach(CommandScheduler::close);
      pools.forEach(com.zaxxer.hikari.HikariDataSource::close);
    }
    for (int i = 0; i < count; i++) {
      assertOncePerTick(ds, "s" + i, Duration.ofSeconds(1));
    }
    assertThat(schedulers).allSatisfy(s -> assertThat(s.checks()).isPositive());
    assertThat(
            Fixtures.count(
                ds,
                "SELECT count(*) - count(DISTINCT (headers->>'messagepump-schedule',"
                    + " headers->>'messagepump-tick')) FROM commandqueue.commands"))
        .isZero();
  }

  /** Each schedule's name, fired count and how far its next tick is behind now. */
  private static List<String> scheduleLag(DataSource ds) {
    List<String> out = new ArrayList<>();
    try (var c = ds.getConnection();
        var ps =
            c.prepareStatement(
                "SELECT name, fired, clock_timestamp() - next_fire_at FROM commandqueue.schedules"
                    + " ORDER BY name");
        var rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(rs.getString(1) + ":" + rs.getLong(2) + "/" + rs.getString(3));
      }
    } catch (java.sql.SQLException e) {
      out.add("unreadable: " + e.getMessage());
    }
    return out;
  }

  private static String loadAverage() {
    return String.valueOf(
        java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
  }

  @Test
  void aRestartWithinTheGraceNeitherDoublesNorLosesTicks(TestDatabase db) throws Exception {
    DataSource ds = db.dataSource();
    queueOn(ds)
        .defineSchedule(
            Schedule.every("r", Duration.ofSeconds(1), new PlaceOrder("r"))
                .withMisfire(MisfirePolicy.skip().withGrace(Duration.ofSeconds(20))));
    for (int run = 0; run < 3; run++) {
      // Each run is a process: its own pool, queue and scheduler; then it stops for a while.
      try (var pool = db.newDataSource("restart-" + run, 2);
          CommandScheduler s =
              CommandScheduler.builder(queueOn(pool)).pollInterval(Duration.ofMillis(50)).build()) {
        s.start();
        long before = Fixtures.count(ds, "SELECT fired FROM commandqueue.schedules");
        await()
            .atMost(Duration.ofSeconds(10))
            .until(
                () -> Fixtures.count(ds, "SELECT fired FROM commandqueue.schedules") >= before + 2);
      }
      Thread.sleep(1500); // down: ticks come due meanwhile, within the grace
    }
    queueOn(ds).operations().schedules().fireDue();
    // Contiguous across the three restarts: the ticks due while down were fired after each one.
    List<Instant> ticks = assertOncePerTick(ds, "r", Duration.ofSeconds(1));
    // At least two per run, and at least one due during the last 1.5 s down.
    assertThat(ticks.size()).isGreaterThanOrEqualTo(7);
  }

  @Test
  void anIdleSchedulerBacksOffAndAWakeUpIsNotFasterThanThePollInterval(DataSource ds)
      throws Exception {
    CommandQueue queue = queueOn(ds);
    try (CommandScheduler s =
        CommandScheduler.builder(queue)
            .pollInterval(Duration.ofMillis(100))
            .maxIdle(Duration.ofSeconds(10))
            .build()) {
      s.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> s.checks() >= 1); // a cold JVM's first
      long first = s.checks();
      Thread.sleep(3000);
      // Without back-off: 30 checks. With it, sleeps of 200, 400, 800, 1600 ms: about 4.
      assertThat(s.checks() - first).isBetween(2L, 6L);
      long before = s.checks();
      long started = System.nanoTime();
      for (int i = 0; i < 50; i++) {
        s.wake();
        Thread.sleep(10);
      }
      long elapsedMs = (System.nanoTime() - started) / 1_000_000;
      // 50 wake-ups: still at most one check per 100 ms.
      assertThat(s.checks() - before).isLessThanOrEqualTo(elapsedMs / 100 + 2);
      // A definition in this process wakes it: the tick, due in 1 s, fires then, not after the
      // seconds of back-off an idle scheduler has reached.
      Thread.sleep(2000);
      queue.defineSchedule(Schedule.every("woken", Duration.ofSeconds(1), new PlaceOrder("w")));
      await().atMost(Duration.ofMillis(3000)).until(() -> ScheduleIT.commandsOf(ds, "woken") >= 1);
    }
  }
}
