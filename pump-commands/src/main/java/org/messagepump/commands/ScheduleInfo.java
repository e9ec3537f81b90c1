package org.messagepump.commands;

import java.time.Duration;
import java.time.Instant;

/**
 * A stored schedule as {@link Schedules#list()} reads it: its definition and its state.
 *
 * @param name the schedule's name
 * @param cron the cron expression, or null for an interval schedule
 * @param interval the interval, or null for a cron schedule
 * @param zone the time zone id the cron expression is read in
 * @param misfire what happens to missed ticks
 * @param type the type name of the command enqueued at each tick
 * @param pausedAt when it was paused (database clock), or null when it runs
 * @param nextTickAt its next tick, or null when it has none
 * @param lastTickAt the last tick a command was enqueued for, or null
 * @param ticksFired how many ticks have enqueued a command
 * @param triggered how many commands {@link Schedules#trigger} enqueued
 */
public record ScheduleInfo(
    String name,
    String cron,
    Duration interval,
    String zone,
    MisfirePolicy misfire,
    String type,
    Instant pausedAt,
    Instant nextTickAt,
    Instant lastTickAt,
    long ticksFired,
    long triggered) {

  /** True when paused. */
  public boolean paused() {
    return pausedAt != null;
  }

  /** The cron expression or, for an interval schedule, {@code every <ISO-8601 duration>}. */
  public String when() {
    return cron != null ? cron : "every " + interval;
  }
}
