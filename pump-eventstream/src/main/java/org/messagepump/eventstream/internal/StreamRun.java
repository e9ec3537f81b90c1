package org.messagepump.eventstream.internal;

import org.messagepump.eventstream.internal.CheckpointQueries.LockedCheckpoint;

/**
 * Consecutive events of one claimed stream acquired in one transaction, handled in order. The run
 * tracks the checkpoint as this transaction has moved it; once one event is not handled (failed,
 * busy, or the checkpoint was set elsewhere) the rest of the run is left for a later delivery.
 */
public final class StreamRun {

  /**
   * One event of a run, with the checkpoint it expects to find: the driver's delivery state. The
   * event's {@link EventRows.Row#problem() problem} says why its stored envelope is unreadable, or
   * is null.
   */
  public record Step(StreamRun run, EventRows.Row event, long expectedCheckpoint) {

    /** True when every earlier event of the run was handled and advanced the checkpoint here. */
    public boolean isNext() {
      return !run.broken && run.checkpoint == expectedCheckpoint;
    }
  }

  private final long streamId;
  private long checkpoint;
  private long stored;
  private boolean broken;
  private Step lastMoved;
  private long beforeLastMove;
  private boolean brokenBeforeLastMove;

  /** A run starting at a claim's checkpoint, which the row holds. */
  public StreamRun(LockedCheckpoint claim) {
    this(claim, claim.checkpoint());
  }

  /**
   * A run starting at a claim's checkpoint whose row holds {@code stored}: the claim moved it past
   * the events it read, so a run whose events are all handled has nothing left to write, and any
   * other end writes the checkpoint back to where the run really got.
   */
  public StreamRun(LockedCheckpoint claim, long stored) {
    this.streamId = claim.streamId();
    this.checkpoint = claim.checkpoint();
    this.stored = stored;
  }

  /**
   * The checkpoint as the row holds it now (after a claim: past the run's last event). Handled
   * events move {@link #checkpoint()} in memory; the row is written again only when the run ends
   * anywhere else, when the batch completes or before a postponement.
   */
  public long stored() {
    return stored;
  }

  /** True when the in-memory checkpoint is ahead of the row. */
  public boolean unsaved() {
    return checkpoint != stored;
  }

  /** Records that the row now holds {@link #checkpoint()}. */
  public void saved() {
    stored = checkpoint;
  }

  /** The stream. */
  public long streamId() {
    return streamId;
  }

  /** The checkpoint as this transaction sees it (handled events included, saved or not). */
  public long checkpoint() {
    return checkpoint;
  }

  /**
   * Records that {@code step}'s handling set the checkpoint; a jump elsewhere ends the run. The
   * move can be undone while it is the last one ({@link #undo}).
   */
  public void moved(Step step, long to, boolean inSequence) {
    lastMoved = step;
    beforeLastMove = checkpoint;
    brokenBeforeLastMove = broken;
    checkpoint = to;
    if (!inSequence) {
      broken = true;
    }
  }

  /**
   * Takes back {@code step}'s move when it is the last one: the pump turned its Handled outcome
   * into a failure after {@code handle} returned (its deferred constraints were violated, or its
   * transaction was aborted by an error the handler swallowed). True when undone.
   */
  public boolean undo(Step step) {
    if (lastMoved != step) {
      return false;
    }
    checkpoint = beforeLastMove;
    broken = brokenBeforeLastMove;
    lastMoved = null;
    return true;
  }

  /** Ends the run: the remaining steps are not handled in this transaction. */
  public void end() {
    broken = true;
  }
}
