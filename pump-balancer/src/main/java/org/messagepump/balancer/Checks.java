package org.messagepump.balancer;

import java.time.Duration;
import org.messagepump.core.Limits;
import org.messagepump.core.spi.Inputs;

/** The checks of this package's identifiers and durations, shared by its public types. */
final class Checks {

  private Checks() {}

  /**
   * An identifier (group, partition key, lease owner): as {@link Inputs#key} (not null, no NUL, at
   * most {@link Limits#MAX_KEY_BYTES} UTF-8 bytes), and not blank.
   */
  static String name(String what, String value) {
    Inputs.key(what, value);
    if (value.isBlank()) {
      throw new IllegalArgumentException(what + " must not be blank");
    }
    return value;
  }

  /** A positive duration of at most {@link Limits#MAX_DELAY}. */
  static Duration positive(String what, Duration d) {
    Inputs.delay(what, d);
    if (d.isZero()) {
      throw new IllegalArgumentException(what + " must be positive: " + d);
    }
    return d;
  }
}
