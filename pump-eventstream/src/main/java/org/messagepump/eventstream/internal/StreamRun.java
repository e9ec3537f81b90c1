package org.messagepump.eventstream.internal;

import org.messagepump.eventstream.internal.CheckpointQueries.LockedCheckpoint;

/**
 * Consecutive events of one claimed stream acquired in one transaction, handled in order. Each
 * event is a {@link Step} that remembers what its handler answered; an event is handled only when
 * its predecessor was handled and answered the offset right after it. The run's checkpoint is
 * written where its outcome is final: at the end of the batch for the handled events ({@link
 * #advance}), or when an event fails or is postponed ({@link #end}); then the rest of the run is
 * left for a later delivery.
 */
public final class StreamRun {

  /**
   * One event of a run, with the checkpoint it expects to find and the step before it in the run:
   * the driver's delivery state. The event's {@link EventRows.Row#problem() problem} says why its
   * stored envelope is unreadable, or is null.
   */
  public static final class Step {
    private final StreamRun run;
    private final EventRows.Row event;
    private final long expectedCheckpoint;
    private final Step previous;
    private long answered = -1;

    /**
     * The step of {@code event} in {@code run}, expecting the checkpoint at {@code
     * expectedCheckpoint}; {@code previous} is the run's step before it, null for its first.
     */
    public Step(StreamRun run, EventRows.Row event, long expectedCheckpoint, Step previous) {
      this.run = run;
      this.event = event;
      this.expectedCheckpoint = expectedCheckpoint;
      this.previous = previous;
    }

    /** The run this step belongs to. */
    public StreamRun run() {
      return run;
    }

    /** The event. */
    public EventRows.Row event() {
      return event;
    }

    /** The checkpoint this event is handled at: its offset, or an earlier skipped offset. */
    public long expectedCheckpoint() {
      return expectedCheckpoint;
    }

    /**
     * True while the run goes on and the step before this one (if any) was handled and answered
     * this step's checkpoint: this event is the one to handle now.
     */
    public boolean isNext() {
      return !run.ended && (previous == null || previous.answered == expectedCheckpoint);
    }

    /** Records the next offset the handler answered for this event (not negative). */
    public void handled(long next) {
      answered = next;
    }

    /** The next offset the handler answered, or -1 while it has not handled this event. */
    public long answered() {
      return answered;
    }
  }

  private final long streamId;
  private long checkpoint;
  private long stored;
  private boolean ended;

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

  /** The checkpoint as the row holds it now (after a claim: past the run's last event). */
  public long stored() {
    return stored;
  }

  /** True when the run's checkpoint differs from the row's. */
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

  /**
   * The run's checkpoint: where it was claimed, then where {@link #advance} or {@link #end} put it.
   */
  public long checkpoint() {
    return checkpoint;
  }

  /** Sets the checkpoint to what a handled event's handler answered (the batch completed). */
  public void advance(long to) {
    checkpoint = to;
  }

  /**
   * Ends the run at {@code at}, the checkpoint of an event that is not handled: the remaining steps
   * are not handled in this transaction.
   */
  public void end(long at) {
    ended = true;
    checkpoint = at;
  }
}
