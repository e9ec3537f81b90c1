package org.messagepump.commands.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Which ticks of a due schedule one check fires, and where the schedule goes on.
 *
 * <p>A due tick is <em>on time</em> when it is no older than the misfire grace at {@code now}, and
 * <em>missed</em> when it is older (the schedulers were down, or every one was paused). On-time
 * ticks all fire (at most {@link #MAX_TICKS_PER_CHECK} per check; the rest in the next check). Of
 * the missed ticks, the latest {@code catchUp} fire, oldest first (none when {@code catchUp} is 0:
 * skip); the others are dropped.
 *
 * @param fire the ticks to enqueue a command for, in order
 * @param next the schedule's next tick after them, or null when it has none
 * @param skipped true when missed ticks were dropped
 */
public record TickPlan(List<Instant> fire, Instant next, boolean skipped) {

  /** Most ticks one schedule fires in one check. */
  public static final int MAX_TICKS_PER_CHECK = 1000;

  /** Most missed ticks walked over to find the ones to catch up. */
  static final int MAX_WALK = 200_000;

  /**
   * Plans a check at {@code now} of a schedule whose next tick is {@code due} (null: none).
   *
   * @param catchUp how many missed ticks to fire (0 to {@link #MAX_TICKS_PER_CHECK})
   * @param grace how late a tick may be and still count as on time
   */
  public static TickPlan of(
      Recurrence ticks, Instant due, Instant now, Duration grace, int catchUp) {
    List<Instant> fire = new ArrayList<>();
    boolean skipped = false;
    Instant cutoff = now.minus(grace);
    Instant t = due;
    if (t != null && t.isBefore(cutoff)) {
      Instant onTime = ticks.next(cutoff.minusNanos(1));
      if (catchUp > 0) {
        Instant start = ticks.backBy(catchUp, cutoff);
        Instant x = start.isAfter(t) ? ticks.next(start.minusNanos(1)) : t;
        skipped = start.isAfter(t);
        ArrayDeque<Instant> last = new ArrayDeque<>(catchUp);
        for (int i = 0; x != null && x.isBefore(cutoff) && i < MAX_WALK; i++) {
          if (last.size() == catchUp) {
            last.removeFirst();
            skipped = true;
          }
          last.addLast(x);
          x = ticks.next(x);
        }
        fire.addAll(last);
      } else {
        skipped = true;
      }
      t = onTime;
    }
    while (t != null && !t.isAfter(now) && fire.size() < MAX_TICKS_PER_CHECK) {
      fire.add(t);
      t = ticks.next(t);
    }
    return new TickPlan(List.copyOf(fire), t, skipped);
  }
}
