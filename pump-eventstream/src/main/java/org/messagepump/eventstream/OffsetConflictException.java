package org.messagepump.eventstream;

import org.messagepump.core.PumpException;

/**
 * An append to a given stream expected another next offset: someone appended in between (optimistic
 * concurrency). Nothing was written.
 */
public class OffsetConflictException extends PumpException {

  private final String streamKey;
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
    this.streamKey = null;
    this.streamId = streamId;
    this.expectedNextOffset = expectedNextOffset;
    this.actualNextOffset = actualNextOffset;
  }

  /**
   * A conflict on the stream of {@code streamKey} ({@code streamId} 0 when the key has no stream
   * yet, so its next offset is 0).
   */
  public OffsetConflictException(
      String streamKey, long streamId, long expectedNextOffset, long actualNextOffset) {
    super(
        "stream key '"
            + streamKey
            + "': expected next offset "
            + expectedNextOffset
            + " but it is "
            + actualNextOffset
            + "; nothing was appended");
    this.streamKey = streamKey;
    this.streamId = streamId;
    this.expectedNextOffset = expectedNextOffset;
    this.actualNextOffset = actualNextOffset;
  }

  /** The application's stream key, or null for a conflict on a stream given by id. */
  public String streamKey() {
    return streamKey;
  }

  /** The stream (0 when a keyed stream does not exist yet). */
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
