package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.Unregistered;
import org.messagepump.commands.testing.CommandQueueFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Defining, listing, pausing, resuming and triggering schedules; misfires; bad input. */
@ExtendWith(PostgresExtension.class)
class ScheduleIT {

  @RegisterExtension
  static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(Fixtures.CODEC);

  private final CommandQueue queue = COMMANDS.queue();
  private Schedules schedules;

  @BeforeEach
  void setUp(DataSource ds) {
    schedules = queue.operations().schedules();
  }

  /** Moves a schedule's time back by {@code seconds}: as if no scheduler had run for that long. */
  static void rewind(DataSource ds, String name, long seconds) {
    try (var c = ds.getConnection();
        var ps =
            c.prepareStatement(
                "UPDATE commandqueue.schedules SET next_fire_at = next_fire_at - make_interval(secs"
                    + " => ?), anchor_at = anchor_at - make_interval(secs => ?) WHERE name = ?")) {
      ps.setDouble(1, seconds);
      ps.setDouble(2, seconds);
      ps.setString(3, name);
      assertThat(ps.executeUpdate()).isOne();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static long commandsOf(DataSource ds, String name) {
    return Fixtures.count(
        ds,
        "SELECT count(*) FROM commandqueue.commands WHERE headers->>'messagepump-schedule' = ?",
        name);
  }

  @Test
  void aDefinitionIsStoredOnceAndKeepsItsNextTickWhenRedefinedUnchanged(DataSource ds) {
    Schedule s = Schedule.every("beat", Duration.ofMinutes(1), new PlaceOrder("b"));
    assertThat(schedules.define(s)).isTrue();
    ScheduleInfo first = schedules.find("beat").orElseThrow();
    assertThat(first.interval()).isEqualTo(Duration.ofMinutes(1));
    assertThat(first.type()).isEqualTo("orders.PlaceOrder");
    assertThat(first.paused()).isFalse();
    Instant dbNow = Instant.parse(dbNow(ds));
    assertThat(first.nextTickAt()).isBetween(dbNow.plusSeconds(50), dbNow.plusSeconds(61));

    // A restart defines it again: nothing moves.
    assertThat(schedules.define(s)).isFalse();
    assertThat(schedules.find("beat").orElseThrow()).isEqualTo(first);

    // Another command keeps the ticks; another interval starts afresh.
    schedules.define(Schedule.every("beat", Duration.ofMinutes(1), new PlaceOrder("c")));
    assertThat(schedules.find("beat").orElseThrow().nextTickAt()).isEqualTo(first.nextTickAt());
    schedules.define(Schedule.every("beat", Duration.ofMinutes(10), new PlaceOrder("c")));
    assertThat(schedules.find("beat").orElseThrow().nextTickAt())
        .isAfter(first.nextTickAt().plusSeconds(60));

    Schedule berlin =
        Schedule.cron("nightly", "0 30 2 * * *", ZoneId.of("Europe/Berlin"), new PlaceOrder("n"))
            .withMisfire(MisfirePolicy.catchUp(2).withGrace(Duration.ofSeconds(5)));
    schedules.define(berlin);
    ScheduleInfo n = schedules.find("nightly").orElseThrow();
    assertThat(n.cron()).isEqualTo("0 30 2 * * *");
    assertThat(n.zone()).isEqualTo("Europe/Berlin");
    assertThat(n.misfire()).isEqualTo(MisfirePolicy.catchUp(2).withGrace(Duration.ofSeconds(5)));
    assertThat(n.nextTickAt().atZone(ZoneId.of("Europe/Berlin")).toLocalTime().toString())
        .isIn("02:30", "03:30");
    assertThat(schedules.list()).extracting(ScheduleInfo::name).containsExactly("beat", "nightly");
    assertThat(schedules.remove("nightly")).isTrue();
    assertThat(schedules.remove("nightly")).isFalse();
  }

  @Test
  void aDueTickEnqueuesOneCommandWithTheTickHeaders(DataSource ds) {
    schedules.define(
        Schedule.every("orders", Duration.ofMinutes(1), new PlaceOrder("o"))
            .withOptions(
                EnqueueOptions.defaults().withCorrelationId("cron").withHeader("tenant", "acme")));
    assertThat(schedules.fireDue()).isZero(); // not due yet
    rewind(ds, "orders", 60);
    assertThat(schedules.fireDue()).isOne();
    assertThat(schedules.fireDue()).isZero();
    ScheduleInfo info = schedules.find("orders").orElseThrow();
    assertThat(info.ticksFired()).isOne();
    assertThat(info.nextTickAt()).isEqualTo(info.lastTickAt().plusSeconds(60));
    assertThat(
            Fixtures.count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_type = 'orders.PlaceOrder'"
                    + " AND correlation_id = 'cron' AND headers->>'tenant' = 'acme'"
                    + " AND headers->>'messagepump-tick' = ?"
                    + " AND convert_from(payload, 'UTF8') LIKE '%\"o\"%'",
                info.lastTickAt().toString()))
        .isOne();
  }

  @Test
  void skipDropsTheMissedTicksOfADowntime(DataSource ds) {
    schedules.define(
        Schedule.every("skip", Duration.ofSeconds(60), new PlaceOrder("s"))
            .withMisfire(MisfirePolicy.skip().withGrace(Duration.ofSeconds(30))));
    rewind(ds, "skip", 600); // ten minutes without a scheduler
    // The tick at the anchor (now, within the grace) fires; the nine older ones are dropped.
    assertThat(schedules.fireDue()).isOne();
    assertThat(schedules.fireDue()).isZero();
    assertThat(commandsOf(ds, "skip")).isOne();
  }

  @Test
  void catchUpFiresAtMostItsNumberOfMissedTicks(DataSource ds) {
    schedules.define(
        Schedule.every("catch", Duration.ofSeconds(60), new PlaceOrder("c"))
            .withMisfire(MisfirePolicy.catchUp(3).withGrace(Duration.ofSeconds(30))));
    rewind(ds, "catch", 600);
    // Three missed ticks and the one on time.
    assertThat(schedules.fireDue()).isEqualTo(4);
    assertThat(schedules.fireDue()).isZero();
    List<String> ticks = ticks(ds, "catch");
    assertThat(ticks).hasSize(4).doesNotHaveDuplicates();
    for (int i = 1; i < ticks.size(); i++) {
      assertThat(Duration.between(Instant.parse(ticks.get(i - 1)), Instant.parse(ticks.get(i))))
          .isEqualTo(Duration.ofSeconds(60));
    }
  }

  @Test
  void aPausedScheduleFiresNothingAndResumesFromNow(DataSource ds) {
    schedules.define(Schedule.every("p", Duration.ofSeconds(60), new PlaceOrder("p")));
    assertThat(schedules.pause("p")).isTrue();
    assertThat(schedules.pause("p")).isFalse();
    assertThat(schedules.find("p").orElseThrow().paused()).isTrue();
    rewind(ds, "p", 600);
    assertThat(schedules.fireDue()).isZero();
    assertThat(schedules.resume("p")).isTrue();
    assertThat(schedules.resume("p")).isFalse();
    ScheduleInfo resumed = schedules.find("p").orElseThrow();
    assertThat(resumed.paused()).isFalse();
    assertThat(resumed.nextTickAt()).isAfter(Instant.parse(dbNow(ds)));
    assertThat(schedules.fireDue()).isZero(); // the ticks due while paused never fire
    assertThat(commandsOf(ds, "p")).isZero();
    assertThat(schedules.pause("absent")).isFalse();
    assertThat(schedules.resume("absent")).isFalse();
  }

  @Test
  void triggerEnqueuesOnceNowWithoutMovingTheTicks(DataSource ds) {
    schedules.define(Schedule.every("t", Duration.ofMinutes(5), new PlaceOrder("t")));
    schedules.pause("t");
    Instant next = schedules.find("t").orElseThrow().nextTickAt();
    Optional<UUID> id = schedules.trigger("t");
    assertThat(id).isPresent();
    assertThat(
            Fixtures.count(
                ds,
                "SELECT count(*) FROM commandqueue.commands WHERE message_id = ?"
                    + " AND headers->>'messagepump-triggered' = 'true'"
                    + " AND headers->>'messagepump-schedule' = 't'",
                id.get()))
        .isOne();
    ScheduleInfo info = schedules.find("t").orElseThrow();
    assertThat(info.triggered()).isOne();
    assertThat(info.ticksFired()).isZero();
    assertThat(info.nextTickAt()).isEqualTo(next);
    assertThat(schedules.trigger("absent")).isEmpty();
  }

  @Test
  void badInputIsRefusedBeforeAnythingIsSent(DataSource ds) {
    PlaceOrder c = new PlaceOrder("x");
    ZoneId utc = ZoneId.of("UTC");
    List<Runnable> bad =
        List.of(
            () -> Schedule.cron(null, "* * * * *", utc, c),
            () -> Schedule.cron("", "* * * * *", utc, c),
            () -> Schedule.cron("a\0b", "* * * * *", utc, c),
            () -> Schedule.cron("n", null, utc, c),
            () -> Schedule.cron("n", "", utc, c),
            () -> Schedule.cron("n", "* * * *\0 *", utc, c),
            () -> Schedule.cron("n", "61 * * * *", utc, c),
            () -> Schedule.cron("n", "every minute", utc, c),
            () -> Schedule.cron("n", "0 0 30 2 *", utc, c), // 30 February: never
            () -> Schedule.cron("n", "* * * * *", (ZoneId) null, c),
            () -> Schedule.cron("n", "* * * * *", (String) null, c),
            () -> Schedule.cron("n", "* * * * *", "Mars/Olympus_Mons", c),
            () -> Schedule.cron("n", "* * * * *", "Europe/Berlin\0", c),
            () -> Schedule.cron("n", "* * * * *", utc, null),
            () -> Schedule.every("n", null, c),
            () -> Schedule.every("n", Duration.ZERO, c),
            () -> Schedule.every("n", Duration.ofSeconds(-5), c),
            () -> Schedule.every("n", Duration.ofMillis(500), c),
            () -> Schedule.every("n", Duration.ofSeconds(1).plusNanos(1), c),
            () ->
                Schedule.every("n", Duration.ofMinutes(1), c)
                    .withOptions(EnqueueOptions.defaults().withIdempotencyKey("k")),
            () ->
                Schedule.every("n", Duration.ofMinutes(1), c)
                    .withOptions(EnqueueOptions.defaults().withDelay(Duration.ofSeconds(1))),
            () ->
                Schedule.every("n", Duration.ofMinutes(1), c)
                    .withOptions(EnqueueOptions.defaults().withHeader(Schedule.HEADER_TICK, "x")),
            () -> Schedule.every("n", Duration.ofMinutes(1), c).withMisfire(null),
            () -> MisfirePolicy.catchUp(0),
            () -> MisfirePolicy.catchUp(MisfirePolicy.MAX_CATCH_UP + 1),
            () -> MisfirePolicy.skip().withGrace(Duration.ofSeconds(-1)),
            () -> schedules.define(null),
            () ->
                schedules.define(Schedule.every("n", Duration.ofMinutes(1), new Unregistered("u"))),
            () -> schedules.pause(null),
            () -> schedules.resume("a\0"),
            () -> schedules.trigger(""),
            () -> schedules.remove(null));
    for (int i = 0; i < bad.size(); i++) {
      assertThatThrownBy(bad.get(i)::run)
          .as("case " + i)
          .isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(Fixtures.count(ds, "SELECT count(*) FROM commandqueue.schedules")).isZero();
  }

  @Test
  void aScheduleInAnotherSchemaIsApart(TestDatabase db) {
    CommandOperations.of(db.dataSource(), "sched_other").migrate();
    CommandQueue other =
        CommandQueue.builder(db.dataSource()).codec(Fixtures.CODEC).schema("sched_other").build();
    other.defineSchedule(Schedule.every("apart", Duration.ofMinutes(1), new PlaceOrder("a")));
    assertThat(other.operations().schedules().list())
        .extracting(ScheduleInfo::name)
        .containsExactly("apart");
    assertThat(schedules.list()).isEmpty();
  }

  @Test
  void everyValueIsBound(TestDatabase db) {
    org.messagepump.testkit.StatementCapture capture =
        org.messagepump.testkit.StatementCapture.of(db.newDataSource("capture", 4));
    CommandQueue q = CommandQueue.create(capture.dataSource(), Fixtures.CODEC);
    String hostile = "it's \"; DROP TABLE x; --";
    Schedule s =
        Schedule.cron(hostile, "0 30 2 * * *", "Europe/Berlin", new PlaceOrder(hostile))
            .withOptions(
                EnqueueOptions.defaults().withCorrelationId(hostile).withHeader(hostile, hostile))
            .withMisfire(MisfirePolicy.catchUp(2));
    q.defineSchedule(s);
    q.defineSchedule(s.withMisfire(MisfirePolicy.skip()));
    q.operations().schedules().pause(hostile);
    q.operations().schedules().resume(hostile);
    q.operations().schedules().trigger(hostile);
    q.operations().schedules().fireDue();
    q.operations().schedules().list();
    q.operations().schedules().remove(hostile);
    assertThat(capture.statements()).isNotEmpty();
    assertThat(capture.statementsWithLiteralsOtherThan(SqlSafetyIT.ALLOWED)).isEmpty();
  }

  static List<String> ticks(DataSource ds, String name) {
    try (var c = ds.getConnection();
        var ps =
            c.prepareStatement(
                "SELECT headers->>'messagepump-tick' FROM commandqueue.commands"
                    + " WHERE headers->>'messagepump-schedule' = ?"
                    + " ORDER BY (headers->>'messagepump-tick')::timestamptz")) {
      ps.setString(1, name);
      try (var rs = ps.executeQuery()) {
        List<String> out = new java.util.ArrayList<>();
        while (rs.next()) {
          out.add(rs.getString(1));
        }
        return out;
      }
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static String dbNow(DataSource ds) {
    try (var c = ds.getConnection();
        var s = c.createStatement();
        var rs =
            s.executeQuery(
                "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC',"
                    + " 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")) {
      rs.next();
      return rs.getString(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
