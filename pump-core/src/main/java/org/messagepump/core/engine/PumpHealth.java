package org.messagepump.core.engine;

import java.time.Instant;
import java.util.Objects;

/**
 * A snapshot of a pump's acquisition health, for health checks (an Actuator indicator, a readiness
 * probe): whether it runs, and whether its polls currently fail.
 *
 * @param state running, degraded (polls fail; the pump backs off until one works again) or stopped
 * @param degradedSince when the current run of failed polls began (wall clock), or null when not
 *     degraded
 * @param lastError a one-line description of the last failed poll, or null when not degraded
 */
public record PumpHealth(State state, Instant degradedSince, String lastError) {

  /** What a pump is doing. */
  public enum State {
    /** Started and acquiring: the last poll worked (or none failed yet). */
    RUNNING,
    /** Started, but polls fail (the database is down or refuses); the pump backs off. */
    DEGRADED,
    /** Not started yet, or closed. */
    STOPPED
  }

  /** Checks that a degraded snapshot says since when and why, and the others do not. */
  public PumpHealth {
    Objects.requireNonNull(state, "state");
    if ((state == State.DEGRADED) != (degradedSince != null)) {
      throw new IllegalArgumentException("degradedSince is set exactly when DEGRADED: " + state);
    }
  }

  static PumpHealth running() {
    return new PumpHealth(State.RUNNING, null, null);
  }

  static PumpHealth stopped() {
    return new PumpHealth(State.STOPPED, null, null);
  }
}
