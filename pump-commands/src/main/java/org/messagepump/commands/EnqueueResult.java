package org.messagepump.commands;

import java.util.Objects;
import java.util.UUID;

/** What an enqueue did: inserted a new command, or found its idempotency key already used. */
public sealed interface EnqueueResult {

  /** The id of the command in the queue: the new one, or the original for a duplicate. */
  UUID messageId();

  /** True when nothing was inserted because the idempotency key was used before. */
  default boolean isDuplicate() {
    return this instanceof Duplicate;
  }

  /** The command was inserted with this id. */
  record Enqueued(UUID messageId) implements EnqueueResult {
    /** Rejects a null id. */
    public Enqueued {
      Objects.requireNonNull(messageId, "messageId");
    }
  }

  /**
   * The idempotency key was used before: nothing was inserted; {@code originalMessageId} is the id
   * of the command first enqueued with the key (which may have been handled and deleted since).
   */
  record Duplicate(UUID originalMessageId) implements EnqueueResult {
    /** Rejects a null id. */
    public Duplicate {
      Objects.requireNonNull(originalMessageId, "originalMessageId");
    }

    @Override
    public UUID messageId() {
      return originalMessageId;
    }
  }
}
