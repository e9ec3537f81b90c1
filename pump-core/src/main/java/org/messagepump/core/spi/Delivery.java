package org.messagepump.core.spi;

import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.messagepump.core.Envelope;

/**
 * One message for one handler, acquired inside a transaction.
 *
 * @param envelope the message's metadata and payload bytes (message id and type live there)
 * @param failures how many times this delivery has failed so far
 * @param logKeys what the pump adds to the SLF4J MDC while the delivery is handled and its outcome
 *     recorded, beside its own {@code pump}, {@code messageId}, {@code messageType} and {@code
 *     attempt} (for example the event store's {@code streamId} and {@code offset}); {@code null}
 *     means none. Keys must be non-blank and must not be one of the pump's own.
 * @param driverState anything the driver needs between acquire, handle, postpone and park (for
 *     example a partition key); never read by the pump
 */
public record Delivery(
    Envelope envelope, int failures, Map<String, String> logKeys, Object driverState) {

  /** The MDC keys the pump sets itself for every delivery. */
  public static final Set<String> PUMP_LOG_KEYS =
      Set.of("pump", "messageId", "messageType", "attempt");

  /**
   * Checks the arguments.
   *
   * @throws IllegalArgumentException if {@code failures} is negative or a log key is blank, null,
   *     has a null value or is one of {@link #PUMP_LOG_KEYS}
   */
  public Delivery {
    Objects.requireNonNull(envelope, "envelope");
    if (failures < 0) {
      throw new IllegalArgumentException("failures must not be negative: " + failures);
    }
    if (logKeys == null || logKeys.isEmpty()) {
      logKeys = Map.of();
    } else {
      for (Map.Entry<String, String> e : logKeys.entrySet()) {
        String k = e.getKey();
        if (k == null || k.isBlank() || PUMP_LOG_KEYS.contains(k) || e.getValue() == null) {
          throw new IllegalArgumentException(
              "log keys must be non-blank, have a value and not be one of "
                  + PUMP_LOG_KEYS
                  + ": "
                  + k);
        }
      }
      logKeys = Map.copyOf(logKeys);
    }
  }

  /** A delivery with no log keys and no driver state. */
  public static Delivery of(Envelope envelope, int failures) {
    return new Delivery(envelope, failures, Map.of(), null);
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
