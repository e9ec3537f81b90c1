package org.messagepump.commands;

import java.time.Instant;
import java.util.Objects;
import java.util.UUID;
import org.messagepump.core.Envelope;

/**
 * A command parked after too many failures.
 *
 * @param envelope the command as it was stored ({@code createdAt} is when it was enqueued)
 * @param failures how many attempts failed
 * @param lastError the error of the last attempt
 * @param parkedAt when it was parked, by the database clock
 * @param priority the command's priority, which a retry keeps ({@link EnqueueOptions#withPriority})
 */
public record DeadLetter(
    Envelope envelope, int failures, String lastError, Instant parkedAt, int priority) {

  /** A dead letter of the default priority. */
  public DeadLetter(Envelope envelope, int failures, String lastError, Instant parkedAt) {
    this(envelope, failures, lastError, parkedAt, EnqueueOptions.DEFAULT_PRIORITY);
  }

  /** Rejects a null envelope. */
  public DeadLetter {
    Objects.requireNonNull(envelope, "envelope");
  }

  /** The command's message id. */
  public UUID messageId() {
    return UUID.fromString(envelope.messageId());
  }

  /** The command's type name. */
  public String type() {
    return envelope.type();
  }

  /** When the command was first enqueued, by the database clock. */
  public Instant enqueuedAt() {
    return envelope.createdAt();
  }
}
