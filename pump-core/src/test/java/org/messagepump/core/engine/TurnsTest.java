package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The rules of when turns start, with the clock in the test's hands. */
class TurnsTest {

  static final long MS = 1_000_000L;
  static final long NEVER = Long.MAX_VALUE;

  private final Turns turns = new Turns(4, Duration.ofMillis(100), 0);

  @Test
  void anIdlePumpStartsOneProbePerPollInterval() {
    assertThat(turns.tryTake(0)).as("the first probe").isZero();
    assertThat(turns.tryTake(0)).as("no second turn while the probe runs").isEqualTo(NEVER);
    long mark = turns.wakes();
    turns.foundNothing(mark, 5 * MS);
    assertThat(turns.tryTake(6 * MS)).as("paused for the interval").isEqualTo(99 * MS);
    assertThat(turns.tryTake(105 * MS)).as("one probe after the interval").isZero();
    assertThat(turns.tryTake(105 * MS)).as("one only").isEqualTo(NEVER);
    turns.foundNothing(mark, 110 * MS);
    assertThat(turns.tryTake(150 * MS)).isEqualTo(60 * MS);
    assertThat(turns.tryTake(210 * MS)).isZero();
  }

  @Test
  void eachPollThatFindsWorkLetsOneMoreTurnStartUpToTheWorkers() {
    assertThat(turns.tryTake(0)).isZero();
    turns.foundWork(1 * MS);
    assertThat(turns.tryTake(1 * MS)).as("a second worker at once").isZero();
    assertThat(turns.tryTake(1 * MS)).as("not a third yet").isEqualTo(NEVER);
    for (int i = 0; i < 10; i++) {
      turns.foundWork(2 * MS);
    }
    for (int i = 0; i < 4; i++) {
      assertThat(turns.tryTake(2 * MS)).as("allowance %d", i).isZero();
    }
    assertThat(turns.tryTake(2 * MS)).as("at most the workers").isEqualTo(NEVER);
  }

  @Test
  void workFoundDuringAPauseLetsNoTurnStartUntilTheProbe() {
    assertThat(turns.tryTake(0)).isZero();
    turns.foundWork(0); // a turn that keeps finding work
    assertThat(turns.tryTake(0)).isZero(); // a second turn
    turns.foundNothing(turns.wakes(), 1 * MS); // the second one found nothing: pause
    turns.foundWork(2 * MS); // the first goes on finding work
    assertThat(turns.tryTake(50 * MS)).isEqualTo(51 * MS);
    assertThat(turns.tryTake(101 * MS)).as("the probe").isZero();
    assertThat(turns.tryTake(101 * MS)).isEqualTo(NEVER);
    turns.foundWork(102 * MS);
    assertThat(turns.tryTake(102 * MS)).as("the probe found work").isZero();
  }

  @Test
  void aWakeUpEndsAnIdlePauseAndKeepsARunningPollFromPausing() {
    assertThat(turns.tryTake(0)).isZero();
    turns.foundNothing(turns.wakes(), 1 * MS);
    turns.wake(10 * MS);
    assertThat(turns.tryTake(10 * MS)).as("a probe at once").isZero();
    long mark = turns.wakes();
    turns.wake(11 * MS); // while that probe runs
    turns.foundNothing(mark, 12 * MS);
    assertThat(turns.tryTake(12 * MS)).as("another probe at once, no pause").isZero();
  }

  @Test
  void aFailedPollBacksOffAndAWakeUpDoesNotEndTheBackoff() {
    assertThat(turns.tryTake(0)).isZero();
    turns.failed(500 * MS);
    turns.wake(10 * MS);
    assertThat(turns.tryTake(10 * MS)).isEqualTo(490 * MS);
    assertThat(turns.tryTake(500 * MS)).as("one probe after the backoff").isZero();
    assertThat(turns.tryTake(500 * MS)).isEqualTo(NEVER);
    turns.foundNothing(turns.wakes(), 501 * MS);
    turns.wake(502 * MS);
    assertThat(turns.tryTake(502 * MS)).as("works again: a wake-up ends the pause").isZero();
  }

  @Test
  void pauseStopsTurnsAndResumeStartsAProbe() {
    turns.pause();
    assertThat(turns.tryTake(0)).isEqualTo(NEVER);
    turns.resume(1 * MS);
    assertThat(turns.tryTake(1 * MS)).isZero();
    turns.stop();
    assertThat(turns.take()).isFalse();
  }

  @Test
  void aTurnThatThrowsIsFollowedByAProbeAfterThePollInterval() {
    assertThat(turns.tryTake(0)).isZero();
    turns.threw(1 * MS);
    assertThat(turns.tryTake(2 * MS)).isEqualTo(99 * MS);
    assertThat(turns.tryTake(101 * MS)).isZero();
  }
}
