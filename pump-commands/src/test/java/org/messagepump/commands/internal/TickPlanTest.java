package org.messagepump.commands.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import org.junit.jupiter.api.Test;

/** Which ticks a check fires under each misfire policy, with fixed instants. */
class TickPlanTest {

  private static final Instant ANCHOR = Instant.parse("2026-01-01T00:00:00Z");
  private static final Recurrence MINUTELY = Recurrence.interval(Duration.ofMinutes(1), ANCHOR);

  private static Instant at(String hhmmss) {
    return Instant.parse("2026-01-01T" + hhmmss + "Z");
  }

  @Test
  void anOnTimeTickFires() {
    TickPlan p =
        TickPlan.of(MINUTELY, at("10:00:00"), at("10:00:00.400"), Duration.ofMinutes(1), 0);
    assertThat(p.fire()).containsExactly(at("10:00:00"));
    assertThat(p.next()).isEqualTo(at("10:01:00"));
    assertThat(p.skipped()).isFalse();
  }

  @Test
  void nothingFiresBeforeTheTick() {
    TickPlan p = TickPlan.of(MINUTELY, at("10:01:00"), at("10:00:59"), Duration.ofMinutes(1), 0);
    assertThat(p.fire()).isEmpty();
    assertThat(p.next()).isEqualTo(at("10:01:00"));
  }

  @Test
  void skipDropsMissedTicksAndFiresThoseWithinTheGrace() {
    // Down from 10:00 to 10:30:30; grace 1 minute: 10:30 is on time, 10:00 to 10:29 are missed.
    TickPlan p = TickPlan.of(MINUTELY, at("10:00:00"), at("10:30:30"), Duration.ofMinutes(1), 0);
    assertThat(p.fire()).containsExactly(at("10:30:00"));
    assertThat(p.next()).isEqualTo(at("10:31:00"));
    assertThat(p.skipped()).isTrue();
    // Grace 0: nothing fires until the next tick.
    TickPlan strict = TickPlan.of(MINUTELY, at("10:00:00"), at("10:30:30"), Duration.ZERO, 0);
    assertThat(strict.fire()).isEmpty();
    assertThat(strict.next()).isEqualTo(at("10:31:00"));
  }

  @Test
  void catchUpFiresTheLatestMissedTicksOldestFirst() {
    TickPlan p = TickPlan.of(MINUTELY, at("10:00:00"), at("10:30:30"), Duration.ofMinutes(1), 3);
    // Missed: 10:00 .. 10:29; the last three, then the on-time 10:30.
    assertThat(p.fire())
        .containsExactly(at("10:27:00"), at("10:28:00"), at("10:29:00"), at("10:30:00"));
    assertThat(p.next()).isEqualTo(at("10:31:00"));
    assertThat(p.skipped()).isTrue();
    // Fewer missed ticks than the catch-up: all of them, nothing skipped.
    TickPlan few = TickPlan.of(MINUTELY, at("10:28:00"), at("10:30:30"), Duration.ofMinutes(1), 3);
    assertThat(few.fire()).containsExactly(at("10:28:00"), at("10:29:00"), at("10:30:00"));
    assertThat(few.skipped()).isFalse();
  }

  @Test
  void aLongOutageIsNotWalkedTickByTick() {
    Recurrence everySecond = Recurrence.interval(Duration.ofSeconds(1), ANCHOR);
    Instant now = Instant.parse("2027-01-01T00:00:00.500Z"); // a year of missed ticks
    long started = System.nanoTime();
    TickPlan p = TickPlan.of(everySecond, ANCHOR.plusSeconds(1), now, Duration.ZERO, 2);
    // Walking 31.5 million ticks would take minutes.
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
    assertThat(p.fire())
        .containsExactly(
            Instant.parse("2026-12-31T23:59:59Z"), Instant.parse("2027-01-01T00:00:00Z"));
    assertThat(p.next()).isEqualTo(Instant.parse("2027-01-01T00:00:01Z"));
    // The same with a cron expression.
    Recurrence cron = Recurrence.cron("* * * * * *", ZoneId.of("Europe/Berlin"));
    TickPlan c = TickPlan.of(cron, ANCHOR.plusSeconds(1), now, Duration.ZERO, 2);
    assertThat(c.fire()).isEqualTo(p.fire());
  }

  @Test
  void oneCheckFiresAtMostItsBound() {
    Recurrence everySecond = Recurrence.interval(Duration.ofSeconds(1), ANCHOR);
    Instant now = ANCHOR.plusSeconds(5000);
    TickPlan p = TickPlan.of(everySecond, ANCHOR.plusSeconds(1), now, Duration.ofDays(1), 0);
    assertThat(p.fire()).hasSize(TickPlan.MAX_TICKS_PER_CHECK);
    assertThat(p.next()).isEqualTo(ANCHOR.plusSeconds(TickPlan.MAX_TICKS_PER_CHECK + 1));
  }
}
