package org.messagepump.eventstream.internal;

import org.messagepump.eventstream.StoredEvent;
import org.messagepump.eventstream.internal.CheckpointQueries.Claim;

/**
 * Consecutive events of one claimed stream acquired in one transaction, handled in order. The run
 * tracks the checkpoint as this transaction has moved it; once one event is not handled (failed,
 * busy, or the checkpoint was set elsewhere) the rest of the run is left for a later delivery.
 */
public final class StreamRun {

  /** One event of a run, with the checkpoint it expects to find: the driver's delivery state. */
  public record Step(StreamRun run, StoredEvent event, long expectedCheckpoint) {

    /** True when every earlier event of the run was handled and advanced the checkpoint here. */
    public boolean isNext() {
      return !run.broken && run.checkpoint == expectedCheckpoint;
    }
  }

  private final long streamId;
  private long checkpoint;
  private boolean broken;

  /** A run starting at a claim's checkpoint. */
  public StreamRun(Claim claim) {
    this.streamId = claim.streamId();
    this.checkpoint = claim.checkpoint();
  }

  /** The stream. */
  public long streamId() {
    return streamId;
  }

  /** The checkpoint as this transaction holds it now. */
  public long checkpoint() {
    return checkpoint;
  }

  /** Records that this transaction set the checkpoint; a jump elsewhere ends the run. */
  public void moved(long to, boolean inSequence) {
    checkpoint = to;
    if (!inSequence) {
      broken = true;
    }
  }

  /** Ends the run: the remaining steps are not handled in this transaction. */
  public void end() {
    broken = true;
  }
}
