package org.messagepump.balancer.internal;

/**
 * A balancer driver's place in the rotation (with lockPartition): the rotation of the last key it
 * took, in the {@code lap}-th walk over the keys, which ends at {@code ceiling}, the highest
 * rotation of the keys that were ready when the lap began (keys that join later have higher
 * rotations and wait for the next lap). {@code moveBack}: a key joined during the lap, so each turn
 * moves its key back, to a rotation drawn then ({@code drawn}: the highest this driver drew in the
 * lap).
 *
 * <p>Keys served early in a lap keep their rotations, below the cursor, so they come round again in
 * the next lap in the order they were served, before every key that joined after them; keys served
 * after a key joined are moved behind it. So keys are served in the order they became ready, and a
 * delivery writes nothing to its key row unless a key joined during the lap.
 *
 * <p>Process-local and lost with the process, which is harmless: a new driver starts a lap at the
 * lowest rotation. Every process walks all ready keys at its own pace, so every key is served once
 * per lap of every process.
 */
public record Cursor(long lap, long rotation, long ceiling, boolean moveBack, long drawn) {

  /** Before the first lap: the first walk starts one from the lowest rotation. */
  public static final Cursor START =
      new Cursor(-1, Long.MAX_VALUE, Long.MAX_VALUE, false, DeliveryQueries.NONE);

  /** True before the first lap: nothing is known of it yet, the next walk starts one. */
  public boolean atLapEnd() {
    return rotation == Long.MAX_VALUE;
  }

  /**
   * The cursor after a Busy turn of the key at {@code rotation}: just before the key when the
   * cursor has passed it, so the key keeps its place and is the next served once due.
   */
  public Cursor keepingPlaceOf(long rotation) {
    long before = rotation - 1;
    return before < this.rotation ? new Cursor(lap, before, ceiling, moveBack, drawn) : this;
  }

  /**
   * The later of two places: the later lap, then the higher rotation. A walk of an earlier lap that
   * ends after a later lap began may have drawn places above that lap's highest rotation: the lap
   * is raised to include them (their keys were served in the earlier lap).
   */
  public static Cursor later(Cursor a, Cursor b) {
    if (a.lap != b.lap) {
      Cursor newer = a.lap > b.lap ? a : b;
      Cursor older = newer == a ? b : a;
      return new Cursor(
          newer.lap,
          newer.rotation,
          Math.max(newer.ceiling, older.drawn),
          newer.moveBack,
          newer.drawn);
    }
    return new Cursor(
        a.lap,
        Math.max(a.rotation, b.rotation),
        Math.max(a.ceiling, b.ceiling),
        a.moveBack || b.moveBack,
        Math.max(a.drawn, b.drawn));
  }

  /** One acquisition's walk from a cursor, statement by statement. */
  public static final class Walk {
    private long lap;
    private long ceiling;
    private boolean moveBack;
    private long drawn;
    private Cursor reached;

    /** A walk from {@code start}. */
    public Walk(Cursor start) {
      this.lap = start.lap;
      this.ceiling = start.ceiling;
      this.moveBack = start.moveBack;
      this.drawn = start.drawn;
    }

    /** The lap the walk is in. */
    public long lap() {
      return lap;
    }

    /** The highest rotation of the lap the walk is in. */
    public long ceiling() {
      return ceiling;
    }

    /** True when the walk's turns move their keys back (a key joined during the lap). */
    public boolean moveBack() {
      return moveBack;
    }

    /** Where the walk got to; null when no statement returned a key. */
    public Cursor reached() {
      return reached;
    }

    /**
     * After a statement of shape {@code shape} ({@link AcquireStatement}) that returned keys: the
     * places it drew, a key that joined above the lap (every later turn of the lap moves its key
     * back), and the next lap when the statement walked round into it — whose highest rotation is
     * the highest of the ready keys then, or of the places this driver drew in the lap that ends
     * (their keys may not have committed them yet), so that every key served in a lap is walked in
     * the next.
     */
    public void took(int shape, DeliveryQueries.Acquired a) {
      drawn = Math.max(drawn, a.drawn());
      boolean wrapped =
          shape == AcquireStatement.WALK_LAP
              || (shape == AcquireStatement.WALK_OPEN && a.lastPart() == 1);
      if (wrapped) {
        lap++;
        ceiling = Math.max(a.top(), drawn);
        moveBack = false;
        drawn = DeliveryQueries.NONE;
      } else if (shape != AcquireStatement.WALK_BOUNDED && a.joinedAbove()) {
        moveBack = true;
      }
      reached = new Cursor(lap, a.lastRotation(), ceiling, moveBack, drawn);
    }
  }
}
