package org.messagepump.commands;

import java.time.Instant;
import java.util.UUID;

/**
 * A command waiting in the queue or running under a lease, as {@link PendingCommands#find} read it.
 * The read takes no lock: a command a pump of the transactional mode is handling right now reads as
 * {@link State#DUE} until its handling transaction commits (and then is gone); cancel and
 * reschedule tell it apart, answering {@code HELD}.
 *
 * @param messageId the command's id
 * @param type the command type name
 * @param idempotencyKey the key it was found by; null when it was found by id (keys are indexed by
 *     key only, so a lookup by id does not read them)
 * @param correlationId its correlation id, or null
 * @param enqueuedAt when it was enqueued (database clock)
 * @param dueAt when it is due; for a command running under a lease, its lease's expiry, when it is
 *     due again unless the lease is extended or the command completes
 * @param failures how many attempts failed so far
 * @param state whether it waits, and how a running one is held
 * @param leaseHolder for {@link State#LEASED}, the holder of the lease ({@code pid@host}); else
 *     null
 * @param leaseExpiresAt for {@link State#LEASED}, when the lease runs out; else null
 */
public record PendingCommand(
    UUID messageId,
    String type,
    String idempotencyKey,
    String correlationId,
    Instant enqueuedAt,
    Instant dueAt,
    int failures,
    State state,
    String leaseHolder,
    Instant leaseExpiresAt) {

  /** Where a pending command stands. */
  public enum State {
    /** Due now: the next poll of a pump of its type takes it. */
    DUE,
    /**
     * Due later, at {@link PendingCommand#dueAt()} (a delay, a due time, or a failure's backoff).
     */
    SCHEDULED,
    /**
     * Running under a lease that has not expired (lease mode, docs/leases.md): cancel and
     * reschedule refuse it with {@code HELD}. A command whose lease expired is {@link #DUE}.
     */
    LEASED
  }
}
