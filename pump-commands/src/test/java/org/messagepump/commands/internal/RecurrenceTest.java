package org.messagepump.commands.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.cronutils.model.time.ExecutionTime;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Ticks of cron expressions and intervals, with fixed instants; daylight-saving transitions of
 * Europe/Berlin in 2026: clocks go forward on 29 March at 02:00 CET (01:00Z) to 03:00 CEST, and
 * back on 25 October at 03:00 CEST (01:00Z) to 02:00 CET.
 */
class RecurrenceTest {

  private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

  private static Instant at(String instant) {
    return Instant.parse(instant);
  }

  @Test
  void aDailyTickInTheSkippedHourFiresOnceShiftedByTheGap() {
    Recurrence daily = Recurrence.cron("30 2 * * *", BERLIN);
    // 02:30 does not exist on 29 March: it fires at 03:30 CEST (01:30Z), once.
    Instant t1 = daily.next(at("2026-03-28T12:00:00Z"));
    assertThat(t1).isEqualTo(at("2026-03-29T01:30:00Z"));
    assertThat(ZonedDateTime.ofInstant(t1, BERLIN).toLocalTime().toString()).isEqualTo("03:30");
    // The next day it is 02:30 CEST again.
    assertThat(daily.next(t1)).isEqualTo(at("2026-03-30T00:30:00Z"));
  }

  @Test
  void aDailyTickInTheRepeatedHourFiresOnceInTheFirstPass() {
    Recurrence daily = Recurrence.cron("30 2 * * *", BERLIN);
    Instant t1 = daily.next(at("2026-10-24T12:00:00Z"));
    assertThat(t1).isEqualTo(at("2026-10-25T00:30:00Z")); // 02:30 CEST, the first pass
    // Not again at 02:30 CET (01:30Z): the next tick is the next day's 02:30 CET.
    assertThat(daily.next(t1)).isEqualTo(at("2026-10-26T01:30:00Z"));
  }

  @Test
  void ticksInsideTheSkippedHourCollapseIntoTheFirstAfterIt() {
    Recurrence quarter = Recurrence.cron("*/15 * * * *", BERLIN);
    List<Instant> ticks = walk(quarter, at("2026-03-29T00:40:00Z"), 5);
    // 01:45 CET, then 02:00 (skipped) resolves to 03:00 CEST, then 03:15, 03:30 ... CEST.
    assertThat(ticks)
        .containsExactly(
            at("2026-03-29T00:45:00Z"),
            at("2026-03-29T01:00:00Z"),
            at("2026-03-29T01:15:00Z"),
            at("2026-03-29T01:30:00Z"),
            at("2026-03-29T01:45:00Z"));
  }

  @Test
  void theRepeatedHourTicksOnlyInItsFirstPass() {
    Recurrence quarter = Recurrence.cron("*/15 * * * *", BERLIN);
    List<Instant> ticks = walk(quarter, at("2026-10-25T00:40:00Z"), 3);
    // 02:45 CEST (00:45Z); then 03:00 CET (02:00Z): nothing during 02:00-02:59 CET.
    assertThat(ticks)
        .containsExactly(
            at("2026-10-25T00:45:00Z"), at("2026-10-25T02:00:00Z"), at("2026-10-25T02:15:00Z"));
    // From inside the second pass (02:10 CET), the next tick is 03:00 CET as well.
    assertThat(quarter.next(at("2026-10-25T01:10:00Z"))).isEqualTo(at("2026-10-25T02:00:00Z"));
  }

  @Test
  void aRealTimeAfterTheGapComesBeforeASkippedTimeShiftedPastIt() {
    // 02:45 (skipped, shifted to 03:45 CEST) and 03:15 CEST: 03:15 fires first.
    Recurrence r = Recurrence.cron("15,45 2,3 * * *", BERLIN);
    assertThat(walk(r, at("2026-03-29T00:00:00Z"), 3))
        .containsExactly(
            at("2026-03-29T01:15:00Z"), // 02:15 shifted to 03:15 CEST, the same as 03:15
            at("2026-03-29T01:45:00Z"), // 02:45 shifted to 03:45 CEST, the same as 03:45
            at("2026-03-30T00:15:00Z")); // 02:15 CEST the next day
  }

  @Test
  void sixFieldsHaveSecondsFirst() {
    Recurrence r = Recurrence.cron("*/10 * * * * *", ZoneOffset.UTC);
    assertThat(walk(r, at("2026-01-01T00:00:00Z"), 3))
        .containsExactly(
            at("2026-01-01T00:00:10Z"), at("2026-01-01T00:00:20Z"), at("2026-01-01T00:00:30Z"));
    assertThat(
            Recurrence.cron("0 0 12 * * MON-FRI", ZoneOffset.UTC).next(at("2026-01-02T13:00:00Z")))
        .isEqualTo(at("2026-01-05T12:00:00Z")); // Friday 13:00 -> Monday noon
  }

  @Test
  void aFractionOfASecondIsNotCarriedIntoTheTicks() {
    Recurrence r = Recurrence.cron("* * * * * *", ZoneOffset.UTC);
    assertThat(r.next(at("2026-01-01T00:00:00.999999999Z"))).isEqualTo(at("2026-01-01T00:00:01Z"));
    assertThat(r.next(at("2026-01-01T00:00:00.5Z"))).isEqualTo(at("2026-01-01T00:00:01Z"));
    assertThat(r.next(at("2026-01-01T00:00:01Z"))).isEqualTo(at("2026-01-01T00:00:02Z"));
  }

  @Test
  void badExpressionsAreRefused() {
    for (String bad :
        new String[] {
          "", "*", "* * * *", "61 * * * *", "* 25 * * *", "a b c d e", "* * * * * * * *"
        }) {
      assertThatThrownBy(() -> Recurrence.parseCron(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("cron expression");
    }
  }

  @Test
  void intervalsTickFromTheirAnchor() {
    Recurrence r = Recurrence.interval(Duration.ofSeconds(90), at("2026-01-01T00:00:00Z"));
    assertThat(r.next(at("2025-12-31T00:00:00Z"))).isEqualTo(at("2026-01-01T00:00:00Z"));
    assertThat(r.next(at("2026-01-01T00:00:00Z"))).isEqualTo(at("2026-01-01T00:01:30Z"));
    assertThat(r.next(at("2026-01-01T00:01:29.999Z"))).isEqualTo(at("2026-01-01T00:01:30Z"));
    // Ignores daylight saving: 90 s apart across Berlin's transition.
    Recurrence hourly = Recurrence.interval(Duration.ofHours(1), at("2026-03-29T00:00:00Z"));
    assertThat(walk(hourly, at("2026-03-29T00:00:00Z"), 2))
        .containsExactly(at("2026-03-29T01:00:00Z"), at("2026-03-29T02:00:00Z"));
  }

  /**
   * next(x) is the first tick after x, where the ticks are every matching wall-clock minute
   * resolved with ZonedDateTime.ofLocal (earlier offset in an overlap, shifted in a gap): checked
   * against that set, the wall-clock matches walked in UTC, around transitions of several zones.
   */
  @Test
  void nextIsTheFirstResolvedWallClockMatchAfter() {
    String[] expressions = {
      "30 2 * * *",
      "*/15 * * * *",
      "15,45 2,3 * * *",
      "0 0 * * * *",
      "0 */20 1-3 * * *",
      "0 1 * * *"
    };
    Object[][] cases = {
      {"Europe/Berlin", LocalDate.parse("2026-03-29")},
      {"Europe/Berlin", LocalDate.parse("2026-10-25")},
      {"America/New_York", LocalDate.parse("2026-03-08")},
      {"America/New_York", LocalDate.parse("2026-11-01")},
      {"Australia/Lord_Howe", LocalDate.parse("2026-04-05")}, // back 30 minutes at 02:00
      {"Australia/Lord_Howe", LocalDate.parse("2026-10-04")} // forward 30 minutes at 02:00
    };
    for (Object[] c : cases) {
      ZoneId zone = ZoneId.of((String) c[0]);
      LocalDate day = (LocalDate) c[1];
      for (String expression : expressions) {
        ExecutionTime matcher = ExecutionTime.forCron(Recurrence.parseCron(expression));
        TreeSet<Instant> ticks = new TreeSet<>();
        // The wall-clock matches, walked in UTC (which has no transitions), each resolved in the
        // zone as java.time resolves a local time.
        ZonedDateTime end = day.plusDays(2).atStartOfDay(ZoneOffset.UTC);
        ZonedDateTime m = day.minusDays(1).atStartOfDay(ZoneOffset.UTC).minusSeconds(1);
        for (Optional<ZonedDateTime> n = matcher.nextExecution(m);
            n.isPresent() && n.get().isBefore(end);
            n = matcher.nextExecution(m)) {
          m = n.get();
          ticks.add(ZonedDateTime.ofLocal(m.toLocalDateTime(), zone, null).toInstant());
        }
        Recurrence r = Recurrence.cron(expression, zone);
        Instant from = day.atStartOfDay(zone).toInstant().minus(Duration.ofHours(6));
        Instant to = day.plusDays(1).atStartOfDay(zone).toInstant();
        for (Instant x = from; x.isBefore(to); x = x.plusSeconds(17 * 60 + 13)) {
          assertThat(r.next(x))
              .as(expression + " in " + zone + " after " + x)
              .isEqualTo(ticks.higher(x));
          Instant t = ticks.higher(x);
          assertThat(r.next(t.minusNanos(1))).as(expression + " at " + t).isEqualTo(t);
        }
      }
    }
  }

  @Test
  void backByReachesAtLeastThatManyTicksBack() {
    Recurrence daily = Recurrence.cron("30 2 * * *", BERLIN);
    Instant before = at("2026-03-31T12:00:00Z");
    Instant start = daily.backBy(3, before);
    assertThat(walk(daily, start, 10).stream().filter(t -> t.isBefore(before)).count())
        .isGreaterThanOrEqualTo(3);
    Recurrence second = Recurrence.interval(Duration.ofSeconds(1), Instant.EPOCH);
    assertThat(second.backBy(5, at("2026-01-01T00:00:00Z"))).isEqualTo(at("2025-12-31T23:59:54Z"));
  }

  private static List<Instant> walk(Recurrence r, Instant from, int n) {
    List<Instant> out = new ArrayList<>();
    Instant t = from;
    for (int i = 0; i < n; i++) {
      t = r.next(t);
      out.add(t);
    }
    return out;
  }
}
