package org.messagepump.eventstream;

import java.util.Objects;

/**
 * A stream a handler lags on, fails on or has parked, with the stream's key when it has one: an
 * entry of {@link EventOperations#behind} and {@link EventOperations#parkedStreams}.
 *
 * @param checkpoint the handler's checkpoint of the stream
 * @param streamKey the stream's application key ({@link EventStore#appendToKey}), or {@code null}
 *     for a stream created without one
 */
public record StreamLag(Checkpoint checkpoint, String streamKey) {

  /** A stream lag entry; the checkpoint is required. */
  public StreamLag {
    Objects.requireNonNull(checkpoint, "checkpoint");
  }

  /** The position of this entry in the lists' order, to read the entries after it. */
  public Cursor cursor() {
    return new Cursor(
        checkpoint.parked(), checkpoint.lag(), checkpoint.handlerKey(), checkpoint.streamId());
  }

  /**
   * A position in the order of {@link EventOperations#behind} and {@link
   * EventOperations#parkedStreams}: parked streams first, then the largest lag first, then by
   * handler key and stream id. A page starts after it (keyset paging).
   *
   * @param parked whether the last entry seen was parked
   * @param lag its lag (not negative)
   * @param handlerKey its handler
   * @param streamId its stream id
   */
  public record Cursor(boolean parked, long lag, String handlerKey, long streamId) {

    /** A cursor; a negative lag or a null handler key is an {@link IllegalArgumentException}. */
    public Cursor {
      if (lag < 0) {
        throw new IllegalArgumentException("lag must not be negative: " + lag);
      }
      if (handlerKey == null) {
        throw new IllegalArgumentException("handlerKey must not be null");
      }
    }
  }
}
