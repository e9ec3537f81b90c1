package org.messagepump.eventstream;

import org.messagepump.core.PumpException;

/**
 * An append to a given stream expected another next offset: someone appended in between (optimistic
 * concurrency). Nothing was written.
 */
public class OffsetConflictException extends PumpException {

  private final long streamId;
  private final long expectedNextOffset;
  private final long actualNextOffset;

  /**
   * A conflict on {@code streamId}: the caller expected one next offset, the stream has another.
   */
  public OffsetConflictException(long streamId, long expectedNextOffset, long actualNextOffset) {
    super(
        "stream "
            + streamId
            + ": expected next offset "
            + expectedNextOffset
            + " but it is "
            + actualNextOffset
            + "; nothing was appended");
    this.streamId = streamId;
    this.expectedNextOffset = expectedNextOffset;
    this.actualNextOffset = actualNextOffset;
  }

  /** The stream. */
  public long streamId() {
    return streamId;
  }

  /** The next offset the caller expected. */
  public long expectedNextOffset() {
    return expectedNextOffset;
  }

  /** The stream's actual next offset. */
  public long actualNextOffset() {
    return actualNextOffset;
  }
}
