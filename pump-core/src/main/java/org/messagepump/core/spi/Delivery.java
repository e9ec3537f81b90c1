package org.messagepump.core.spi;

import java.util.Objects;
import org.messagepump.core.Envelope;

/**
 * One message for one handler, acquired inside a transaction.
 *
 * @param envelope the message's metadata and payload bytes (message id and type live there)
 * @param failures how many times this delivery has failed so far
 * @param stream where the delivery sits in a stream, or {@code null} for non-stream drivers
 * @param driverState anything the driver needs between acquire, handle, postpone and park (for
 *     example a partition key); never read by the pump
 */
public record Delivery(Envelope envelope, int failures, DeliveryStream stream, Object driverState) {

  public Delivery {
    Objects.requireNonNull(envelope, "envelope");
    if (failures < 0) {
      throw new IllegalArgumentException("failures must not be negative: " + failures);
    }
  }

  /** A delivery with no stream position and no driver state. */
  public static Delivery of(Envelope envelope, int failures) {
    return new Delivery(envelope, failures, null, null);
  }

  /** The message id (a UUID for commands and events, a number for balancer messages). */
  public String messageId() {
    return envelope.messageId();
  }

  /** The stable type name of the message. */
  public String messageType() {
    return envelope.type();
  }

  /** The attempt this handling is: {@code failures + 1}. */
  public int attempt() {
    return failures + 1;
  }
}
