package org.messagepump.commands;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;

/**
 * One handled command of a queue's history ({@link CommandQueue.Builder#history(boolean)}).
 *
 * @param historyId the history row's id (with {@code handledAt}, the cursor of {@link
 *     CommandOperations#history})
 * @param messageId the command's id
 * @param type the command's type
 * @param idempotencyKey the command's idempotency key, null when it had none
 * @param attempts the attempt that handled it: 1 when its first handling succeeded
 * @param handling how long its handler ran
 * @param handledAt when the handling transaction wrote the row (database clock)
 */
public record HandledCommand(
    long historyId,
    UUID messageId,
    String type,
    String idempotencyKey,
    int attempts,
    Duration handling,
    Instant handledAt) {

  /** The failures before the successful attempt. */
  public int failures() {
    return attempts - 1;
  }
}
