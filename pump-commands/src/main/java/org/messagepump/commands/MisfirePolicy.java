package org.messagepump.commands;

import java.time.Duration;
import java.util.Objects;
import org.messagepump.commands.internal.TickPlan;

/**
 * What a schedule does with ticks it missed (no scheduler ran, or every one was stopped, when they
 * were due). A tick no older than the {@linkplain #grace() grace} when a scheduler checks is on
 * time and always fires; an older one is missed. {@link #skip()} drops missed ticks; {@link
 * #catchUp(int)} fires the latest {@code n} of them, oldest first, and drops the rest. Ticks due
 * while a schedule was paused are never fired.
 */
public final class MisfirePolicy {

  /** Default grace: a tick up to one minute late is on time. */
  public static final Duration DEFAULT_GRACE = Duration.ofMinutes(1);

  /** Longest grace: one day. */
  public static final Duration MAX_GRACE = Duration.ofDays(1);

  /** Most missed ticks a schedule catches up: {@value}. */
  public static final int MAX_CATCH_UP = TickPlan.MAX_TICKS_PER_CHECK;

  private static final MisfirePolicy SKIP = new MisfirePolicy(0, DEFAULT_GRACE);

  private final int catchUp;
  private final Duration grace;

  private MisfirePolicy(int catchUp, Duration grace) {
    this.catchUp = catchUp;
    this.grace = grace;
  }

  /** Missed ticks are dropped; the schedule goes on with its next tick. The default. */
  public static MisfirePolicy skip() {
    return SKIP;
  }

  /**
   * The latest {@code max} missed ticks fire (one command each, oldest first), the older ones are
   * dropped. {@code max} is 1 to {@value #MAX_CATCH_UP}, else {@link IllegalArgumentException}.
   */
  public static MisfirePolicy catchUp(int max) {
    if (max < 1 || max > MAX_CATCH_UP) {
      throw new IllegalArgumentException(
          "catch-up must be between 1 and " + MAX_CATCH_UP + ": " + max);
    }
    return new MisfirePolicy(max, DEFAULT_GRACE);
  }

  /**
   * This policy with another grace: how late a tick may be found and still count as on time; 0 to
   * {@link #MAX_GRACE}, else {@link IllegalArgumentException}. Default {@link #DEFAULT_GRACE}.
   */
  public MisfirePolicy withGrace(Duration grace) {
    if (grace == null) {
      throw new IllegalArgumentException("grace must not be null");
    }
    if (grace.isNegative() || grace.compareTo(MAX_GRACE) > 0) {
      throw new IllegalArgumentException("grace must be between 0 and " + MAX_GRACE + ": " + grace);
    }
    return new MisfirePolicy(catchUp, Duration.ofMillis(grace.toMillis()));
  }

  /** How many missed ticks fire: 0 for {@link #skip()}. */
  public int maxCatchUp() {
    return catchUp;
  }

  /** How late a tick may be found and still count as on time. */
  public Duration grace() {
    return grace;
  }

  static MisfirePolicy of(int catchUp, Duration grace) {
    return new MisfirePolicy(catchUp, grace);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MisfirePolicy p && p.catchUp == catchUp && p.grace.equals(grace);
  }

  @Override
  public int hashCode() {
    return Objects.hash(catchUp, grace);
  }

  @Override
  public String toString() {
    return (catchUp == 0 ? "skip" : "catch up " + catchUp) + " (grace " + grace + ")";
  }
}
