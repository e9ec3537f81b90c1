package org.messagepump.eventstream;

import org.messagepump.core.PumpException;

/**
 * Setting a checkpoint was guarded by an expected current offset, and the checkpoint holds another.
 * Nothing was changed.
 */
public class CheckpointConflictException extends PumpException {

  private final long actualOffset;

  /** A conflict on one handler's checkpoint of one stream. */
  public CheckpointConflictException(
      String handlerKey, long streamId, long expectedOffset, long actualOffset) {
    super(
        "handler '"
            + handlerKey
            + "', stream "
            + streamId
            + ": expected checkpoint "
            + expectedOffset
            + " but it is "
            + actualOffset
            + "; nothing was changed");
    this.actualOffset = actualOffset;
  }

  /** The checkpoint's actual offset. */
  public long actualOffset() {
    return actualOffset;
  }
}
