package org.messagepump.commands.internal;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.Optional;

/**
 * The ticks of a schedule: a cron expression read in a time zone, or a fixed interval from an
 * anchor. Pure computation on instants; the caller passes the database clock's time.
 *
 * <p>Cron expressions are parsed and matched by cron-utils (a maintained library: cron syntax has
 * many corner cases — ranges, steps, names, {@code L}, {@code W}, {@code #} — that a hand-written
 * parser would get wrong). Five fields are read as Unix cron (minute first); six as Spring's
 * (second first). cron-utils matches <em>wall-clock</em> times: it runs here on {@link
 * LocalDateTime}s (in UTC, which has no transitions), and the resolution of a wall-clock time to an
 * instant in the schedule's zone is done here, as {@link ZonedDateTime#ofLocal} does it:
 *
 * <ul>
 *   <li>a wall-clock time in a gap (the hour skipped when clocks go forward) is shifted later by
 *       the length of the gap: 02:30 on a day that jumps from 02:00 to 03:00 becomes 03:30. Ticks
 *       that land on one instant fire once;
 *   <li>a wall-clock time in an overlap (the hour repeated when clocks go back) is the earlier of
 *       its two instants: the tick fires once, in the first pass; during the second pass no tick of
 *       the repeated wall-clock times fires.
 * </ul>
 *
 * <p>A fixed interval ignores the zone: its ticks are {@code anchor + k * interval}.
 */
public abstract sealed class Recurrence {

  private static final CronParser UNIX =
      new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
  private static final CronParser SPRING =
      new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));

  /** Bound on matches examined to find one tick (a repeated hour of a per-second expression). */
  private static final int MAX_STEPS = 10_000;

  /**
   * Margin for a zone's offset changes when stepping back over wall-clock times: transitions move
   * the wall clock by at most two hours in today's zones.
   */
  private static final Duration OFFSET_MARGIN = Duration.ofHours(3);

  private Recurrence() {}

  /** The first tick strictly after {@code after}, or null when there is none. */
  public abstract Instant next(Instant after);

  /**
   * An instant at or before which lie at least {@code n} ticks before {@code before} (when the
   * schedule has that many): where to start walking forward to find the last {@code n} ticks before
   * {@code before} without walking every tick since a long outage began.
   */
  public abstract Instant backBy(int n, Instant before);

  /**
   * Parses a cron expression: five fields (Unix: minute, hour, day of month, month, day of week) or
   * six (Spring: second first). Throws {@link IllegalArgumentException} naming the problem.
   */
  public static Cron parseCron(String expression) {
    String trimmed = expression.trim();
    int fields = trimmed.isEmpty() ? 0 : trimmed.split("\\s+").length;
    CronParser parser;
    if (fields == 5) {
      parser = UNIX;
    } else if (fields == 6) {
      parser = SPRING;
    } else {
      throw new IllegalArgumentException(
          "cron expression '"
              + expression
              + "' has "
              + fields
              + " fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (second"
              + " first)");
    }
    try {
      Cron cron = parser.parse(trimmed);
      cron.validate();
      return cron;
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "invalid cron expression '" + expression + "': " + e.getMessage(), e);
    }
  }

  /** The ticks of {@code expression} (see {@link #parseCron}) in {@code zone}. */
  public static Recurrence cron(String expression, ZoneId zone) {
    return new CronTicks(parseCron(expression), zone);
  }

  /** Ticks every {@code interval} (at least one millisecond) from {@code anchor}. */
  public static Recurrence interval(Duration interval, Instant anchor) {
    return new IntervalTicks(interval.toMillis(), anchor);
  }

  /** Cron ticks in a zone. */
  static final class CronTicks extends Recurrence {
    private final ExecutionTime execution;
    private final ZoneId zone;
    private final ZoneRules rules;

    CronTicks(Cron cron, ZoneId zone) {
      this.execution = ExecutionTime.forCron(cron);
      this.zone = zone;
      this.rules = zone.getRules();
    }

    @Override
    public Instant next(Instant after) {
      LocalDateTime local = LocalDateTime.ofInstant(after, zone);
      LocalDateTime from = local;
      Instant best = null;
      ZoneOffsetTransition last = rules.previousTransition(after.plusNanos(1));
      if (last != null) {
        Instant end = last.getInstant().plus(last.getDuration().abs());
        if (last.isOverlap() && after.isBefore(end)) {
          // In the second pass of a repeated hour: its wall-clock times resolve to the first pass,
          // which is over; the next tick is at or after the end of the overlap.
          LocalDateTime overlapEnd = last.getDateTimeBefore().minusNanos(1);
          if (overlapEnd.isAfter(from)) {
            from = overlapEnd;
          }
        } else if (last.isGap() && after.isBefore(end)) {
          // Within a gap's length after a skipped hour: a skipped wall-clock time shifted by the
          // gap
          // may still be ahead.
          LocalDateTime m = match(local.minus(last.getDuration()));
          if (m != null && m.isBefore(last.getDateTimeAfter())) {
            best = resolve(m);
          }
        }
      }
      LocalDateTime m = match(from);
      for (int i = 0; m != null && i < MAX_STEPS; i++) {
        Instant at = resolve(m);
        if (at.isAfter(after)) {
          best = min(best, at);
          ZoneOffsetTransition gap = rules.getTransition(m);
          if (gap != null && gap.isGap()) {
            // A skipped time resolves past the gap, where a real time may come earlier.
            LocalDateTime real = match(gap.getDateTimeAfter().minusNanos(1));
            if (real != null) {
              best = min(best, resolve(real));
            }
          }
          return best;
        }
        m = match(m);
      }
      return best;
    }

    @Override
    public Instant backBy(int n, Instant before) {
      LocalDateTime m = LocalDateTime.ofInstant(before, zone).truncatedTo(ChronoUnit.SECONDS);
      for (int i = 0; i < n; i++) {
        Optional<ZonedDateTime> last = execution.lastExecution(m.atZone(ZoneOffset.UTC));
        if (last.isEmpty()) {
          break;
        }
        m = last.get().toLocalDateTime().truncatedTo(ChronoUnit.SECONDS);
      }
      Instant start = m.atZone(zone).toInstant();
      // Without a transition nearby, wall clock and instants keep one offset: start is exact.
      ZoneOffsetTransition near = rules.nextTransition(start.minus(OFFSET_MARGIN));
      return near != null && !near.getInstant().isAfter(before)
          ? start.minus(OFFSET_MARGIN)
          : start;
    }

    /**
     * The first wall-clock time strictly after {@code local} that matches, or null. Matches are
     * whole seconds; cron-utils would carry a fraction of a second of its argument over, so it is
     * given whole seconds.
     */
    private LocalDateTime match(LocalDateTime local) {
      return execution
          .nextExecution(local.truncatedTo(ChronoUnit.SECONDS).atZone(ZoneOffset.UTC))
          .map(z -> z.toLocalDateTime().truncatedTo(ChronoUnit.SECONDS))
          .orElse(null);
    }

    private Instant resolve(LocalDateTime local) {
      return ZonedDateTime.ofLocal(local, zone, null).toInstant();
    }

    private static Instant min(Instant a, Instant b) {
      return a == null || b.isBefore(a) ? b : a;
    }
  }

  /** Fixed-interval ticks. */
  static final class IntervalTicks extends Recurrence {
    private final long millis;
    private final Instant anchor;

    IntervalTicks(long millis, Instant anchor) {
      if (millis < 1) {
        throw new IllegalArgumentException("interval must be at least 1 ms: " + millis);
      }
      this.millis = millis;
      this.anchor = anchor;
    }

    @Override
    public Instant next(Instant after) {
      if (after.isBefore(anchor)) {
        return anchor;
      }
      long elapsed = Duration.between(anchor, after).toMillis();
      return anchor.plusMillis(Math.multiplyExact(Math.floorDiv(elapsed, millis) + 1, millis));
    }

    @Override
    public Instant backBy(int n, Instant before) {
      return before.minusMillis(Math.multiplyExact((long) n + 1, millis));
    }
  }
}
