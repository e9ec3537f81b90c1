package org.messagepump.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

class BackoffTest {

  @Test
  void delayStaysWithinBaseAndCappedCeilingForZeroToSeventyFailures() {
    Duration base = Duration.ofMillis(250);
    Duration cap = Duration.ofMinutes(5);
    Backoff backoff = new Backoff(base, cap);
    RandomGenerator random = new SplittableRandom(42);
    for (int n = 0; n <= 70; n++) {
      Duration expectedCeiling =
          n >= 20 ? cap : min(cap, Duration.ofNanos(base.toNanos() * (1L << n)));
      assertThat(backoff.ceiling(n)).as("ceiling for %d failures", n).isEqualTo(expectedCeiling);
      Duration lowest = expectedCeiling;
      Duration highest = Duration.ZERO;
      for (int i = 0; i < 2_000; i++) {
        Duration d = backoff.delay(n, random);
        assertThat(d).as("delay for %d failures", n).isBetween(base, expectedCeiling);
        lowest = min(lowest, d);
        highest = highest.compareTo(d) < 0 ? d : highest;
      }
      if (expectedCeiling.compareTo(base) > 0) {
        // Equal jitter spreads over the whole range, not just near one end.
        Duration spread = expectedCeiling.minus(base);
        assertThat(lowest).isLessThan(base.plus(spread.dividedBy(4)));
        assertThat(highest).isGreaterThan(expectedCeiling.minus(spread.dividedBy(4)));
      }
    }
  }

  @Test
  void neverOverflowsWithExtremeValues() {
    Backoff tiny = new Backoff(Duration.ofNanos(1), Duration.ofDays(365L * 200));
    RandomGenerator random = new SplittableRandom(7);
    for (int n : new int[] {0, 1, 62, 63, 64, 65, 1_000, Integer.MAX_VALUE}) {
      Duration d = tiny.delay(n, random);
      assertThat(d).isPositive().isLessThanOrEqualTo(Duration.ofDays(365L * 200));
    }
    assertThat(tiny.ceiling(62)).isEqualTo(Duration.ofNanos(1L << 62));
    assertThat(tiny.ceiling(63)).isEqualTo(Duration.ofDays(365L * 200));
    Backoff huge = new Backoff(Duration.ofDays(365L * 100), Duration.ofSeconds(Long.MAX_VALUE));
    assertThat(huge.delay(Integer.MAX_VALUE, random)).isPositive();
  }

  @Test
  void firstFailureIsBetweenBaseAndTwiceBase() {
    Backoff backoff = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(10));
    assertThat(backoff.ceiling(0)).isEqualTo(Duration.ofMillis(100));
    assertThat(backoff.ceiling(1)).isEqualTo(Duration.ofMillis(200));
    assertThat(backoff.ceiling(7)).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void rejectsBadBounds() {
    assertThatThrownBy(() -> new Backoff(Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffBase");
    assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backoffCap");
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }
}
