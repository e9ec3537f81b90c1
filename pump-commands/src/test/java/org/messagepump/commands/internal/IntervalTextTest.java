package org.messagepump.commands.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The interval text of a postponement or key period: whole days as days, as jOOQ's {@code
 * DayToSecond} binding gives them, the rest as hours, minutes and seconds.
 */
class IntervalTextTest {

  @Test
  void daysStayDaysAndTheRestIsExact() {
    assertThat(CommandTables.interval(Duration.ZERO)).isEqualTo("P0DT0S");
    assertThat(CommandTables.interval(Duration.ofMillis(250))).isEqualTo("P0DT0.25S");
    assertThat(CommandTables.interval(Duration.ofHours(49).plusNanos(1_234_567_891L)))
        .isEqualTo("P2DT1H1.234567891S");
    assertThat(CommandTables.interval(Duration.ofDays(36_500))).isEqualTo("P36500DT0S");
  }

  @Test
  void aDelayOutsideTheLimitsIsRefused() {
    assertThatThrownBy(() -> CommandTables.interval(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> CommandTables.interval(Duration.ofDays(36_501)))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
