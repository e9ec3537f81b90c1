package org.messagepump.eventstream;

import java.time.Instant;

/**
 * A handler's position in one stream, as operators see it.
 *
 * @param handlerKey the handler
 * @param streamId the stream
 * @param offset the offset of the next event the handler has to look at
 * @param streamNextOffset the stream's committed next offset
 * @param failures consecutive failures on this stream
 * @param resumeAt when the handler may read this stream again (after a postponement), or {@code
 *     null} when it may now
 * @param parkedAt when the stream was parked for this handler, or {@code null}
 * @param parkedReason why it was parked, or {@code null}
 * @param tracked false when the handler has not started reading the stream yet (offset 0)
 */
public record Checkpoint(
    String handlerKey,
    long streamId,
    long offset,
    long streamNextOffset,
    int failures,
    Instant resumeAt,
    Instant parkedAt,
    String parkedReason,
    boolean tracked) {

  /** How many events of the stream lie at or after the checkpoint (0 when caught up). */
  public long lag() {
    return Math.max(0, streamNextOffset - offset);
  }

  /** True when the stream is parked for this handler. */
  public boolean parked() {
    return parkedAt != null;
  }
}
