package org.messagepump.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.messagepump.balancer.internal.Acquisition.Cursor;

/** The cursor's laps, without a database: what a walk learns from each statement. */
class CursorTest {

  private static final long NONE = Acquisition.NONE;

  /** A statement's result with keys up to {@code last} of range {@code part}. */
  private static Acquisition.Acquired took(
      long last, int part, boolean joinedAbove, long top, long drawn) {
    return new Acquisition.Acquired(
        List.of(), List.of(), List.of(), 1, last, part, joinedAbove, false, top, drawn);
  }

  /** A statement's result that read the sequence drawn above the lap, and looked then. */
  private static Acquisition.Acquired drawnAbove(long last, boolean joinedAbove, long drawn) {
    return new Acquisition.Acquired(
        List.of(), List.of(), List.of(), 1, last, 0, joinedAbove, true, NONE, drawn);
  }

  @Test
  void theFirstWalkStartsALapThatEndsAtTheHighestRotationThen() {
    assertThat(Cursor.START.atLapEnd()).isTrue();
    Cursor.Walk walk = new Cursor.Walk(Cursor.START);
    walk.took(Acquisition.WALK_LAP, took(3, 0, false, 40, NONE));
    assertThat(walk.reached()).isEqualTo(new Cursor(0, 3, 40, false, NONE));
    assertThat(walk.reached().atLapEnd()).isFalse();
  }

  @Test
  void aKeyThatJoinedAboveTheLapMakesTheRestOfTheLapMoveKeysBack() {
    Cursor.Walk walk = new Cursor.Walk(new Cursor(2, 10, 40, false, NONE));
    walk.took(Acquisition.WALK_AFTER, took(11, 0, false, NONE, NONE));
    assertThat(walk.moveBack()).isFalse();
    walk.took(Acquisition.WALK_AFTER, took(12, 0, true, NONE, 45));
    assertThat(walk.reached()).isEqualTo(new Cursor(2, 12, 40, true, 45));
    // A statement that moves keys back does not look again: it stays so for the lap.
    walk.took(Acquisition.WALK_AFTER | Acquisition.MOVE_BACK, took(13, 0, false, NONE, 46));
    assertThat(walk.reached()).isEqualTo(new Cursor(2, 13, 40, true, 46));
  }

  @Test
  void theSequenceDrawnAboveTheLapMakesTheRestOfTheLapLookExactly() {
    Cursor.Walk walk = new Cursor.Walk(new Cursor(2, 10, 40, false, NONE));
    assertThat(walk.exact()).isFalse();
    // Drawn by another group or process: no key joined, but from now on each statement looks.
    walk.took(Acquisition.WALK_AFTER, drawnAbove(11, false, NONE));
    assertThat(walk.exact()).isTrue();
    assertThat(walk.moveBack()).isFalse();
    assertThat(walk.reached()).isEqualTo(new Cursor(2, 11, 40, false, NONE, true));
    // Kept across acquisitions, by a Busy turn's cursor and by the later of two places in the lap.
    Cursor.Walk next = new Cursor.Walk(walk.reached());
    assertThat(next.exact()).isTrue();
    assertThat(walk.reached().keepingPlaceOf(5).exact()).isTrue();
    assertThat(Cursor.later(new Cursor(2, 12, 40, false, NONE), walk.reached()))
        .isEqualTo(new Cursor(2, 12, 40, false, NONE, true));
    // A key that joined, seen by the look after the sequence: the lap moves keys back.
    Cursor.Walk joined = new Cursor.Walk(new Cursor(2, 10, 40, false, NONE));
    joined.took(Acquisition.WALK_AFTER, drawnAbove(11, true, 45));
    assertThat(joined.reached()).isEqualTo(new Cursor(2, 11, 40, true, 45, true));
    // The next lap starts without: its statements read the sequence again.
    next.took(Acquisition.WALK_LAP, took(1, 0, false, 44, NONE));
    assertThat(next.reached()).isEqualTo(new Cursor(3, 1, 44, false, NONE, false));
  }

  @Test
  void theNextLapIncludesThePlacesDrawnInTheLapThatEnded() {
    // Places drawn this lap (up to 46) may not be committed yet: the top seen is lower.
    Cursor.Walk walk = new Cursor.Walk(new Cursor(2, 38, 40, true, 46));
    walk.took(Acquisition.WALK_LAP, took(1, 0, false, 44, NONE));
    assertThat(walk.reached()).isEqualTo(new Cursor(3, 1, 46, false, NONE));
    // A walk of both ranges wraps when its last key is of the second range.
    Cursor.Walk open = new Cursor.Walk(new Cursor(2, 38, 40, true, 46));
    open.took(Acquisition.WALK_OPEN, took(5, 1, false, 44, 48));
    assertThat(open.reached()).isEqualTo(new Cursor(3, 5, 48, false, NONE));
    Cursor.Walk first = new Cursor.Walk(new Cursor(2, 30, 40, false, NONE));
    first.took(Acquisition.WALK_OPEN, took(39, 0, false, 44, NONE));
    assertThat(first.reached()).isEqualTo(new Cursor(2, 39, 40, false, NONE));
  }

  @Test
  void concurrentWalksKeepTheLaterPlace() {
    Cursor a = new Cursor(2, 12, 40, false, NONE);
    Cursor b = new Cursor(2, 15, 40, true, 47);
    assertThat(Cursor.later(a, b)).isEqualTo(new Cursor(2, 15, 40, true, 47));
    assertThat(Cursor.later(b, a)).isEqualTo(new Cursor(2, 15, 40, true, 47));
    // A walk of lap 2 that drew 49 ends after another started lap 3 at 48: lap 3 includes 49.
    Cursor next = new Cursor(3, 2, 48, false, NONE);
    Cursor late = new Cursor(2, 39, 40, true, 49);
    assertThat(Cursor.later(next, late)).isEqualTo(new Cursor(3, 2, 49, false, NONE));
    assertThat(Cursor.later(late, next)).isEqualTo(new Cursor(3, 2, 49, false, NONE));
  }

  @Test
  void aBusyKeyKeepsItsPlace() {
    Cursor c = new Cursor(2, 15, 40, false, NONE);
    assertThat(c.keepingPlaceOf(12)).isEqualTo(new Cursor(2, 11, 40, false, NONE));
    assertThat(c.keepingPlaceOf(20)).isSameAs(c);
  }
}
