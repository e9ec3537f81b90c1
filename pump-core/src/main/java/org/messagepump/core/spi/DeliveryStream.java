package org.messagepump.core.spi;

/**
 * Where a stream delivery sits: its stream, the event's offset and the handler's checkpoint at
 * acquisition.
 */
public record DeliveryStream(String streamId, long eventOffset, long checkpointOffset) {
  public DeliveryStream {
    if (streamId == null || streamId.isBlank()) {
      throw new IllegalArgumentException("streamId must not be blank");
    }
    if (eventOffset < 0 || checkpointOffset < 0) {
      throw new IllegalArgumentException("offsets must not be negative");
    }
  }
}
