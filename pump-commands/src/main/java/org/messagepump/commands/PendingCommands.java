package org.messagepump.commands;

import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.QueryPart;
import org.messagepump.commands.internal.CommandTables;
import org.messagepump.commands.internal.PendingQueries;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Transactions;

/**
 * One pending command at a time (from {@link CommandOperations#pending()}): find it by message id
 * or idempotency key, cancel it, or move it to another time. Each call is one statement in a
 * transaction of its own. A look-up is a plain read (a role with {@code SELECT} only may run it); a
 * write needs {@code UPDATE} and {@code DELETE} on the queue's tables, as pumps do.
 *
 * <p>A write never waits behind a handler and never races one: it locks the command's row with
 * {@code FOR UPDATE SKIP LOCKED}, and leaves a row alone that a pump of the transactional mode
 * holds (its claim locked it in the handling transaction) or whose lease has not expired (lease
 * mode). Such a command is answered {@link CancelResult#HELD} / {@link RescheduleResult#HELD}, not
 * an exception, and nothing changes. So a command is either handled or cancelled, never both; a
 * command whose lease expired is due again and can be cancelled, after which the holder of that
 * lease can no longer complete it (its fencing token no longer matches).
 *
 * <p>Cancelling keeps the command's idempotency key: an enqueue with that key is still a duplicate
 * and enqueues nothing, as for a handled command. That is the safer default: a client retrying the
 * original request cannot bring a cancelled command back. Enqueue again with another key to run it
 * after all.
 *
 * <p>Arguments are checked before anything is sent: a null id, key or time, an empty key, one
 * holding NUL or longer than {@link org.messagepump.core.Limits#MAX_KEY_BYTES} UTF-8 bytes, or a
 * time outside {@link org.messagepump.core.Limits#MIN_INSTANT}..{@link
 * org.messagepump.core.Limits#MAX_INSTANT} is refused with {@link IllegalArgumentException} naming
 * the argument.
 */
public final class PendingCommands {

  private final DataSource dataSource;
  private final CommandTables tables;

  PendingCommands(DataSource dataSource, CommandTables tables) {
    this.dataSource = dataSource;
    this.tables = tables;
  }

  /** The pending command with this message id, if it is in the queue. */
  public Optional<PendingCommand> find(UUID messageId) {
    return find(PendingQueries.byId(id(messageId)), null);
  }

  /**
   * The pending command enqueued with this idempotency key, if it is still in the queue (a key
   * outlives its command: a handled or cancelled command's key finds nothing).
   */
  public Optional<PendingCommand> findByKey(String idempotencyKey) {
    String key = key(idempotencyKey);
    return find(PendingQueries.byKey(tables, key), key);
  }

  /** Deletes the pending command with this message id unless a running handler holds it. */
  public CancelResult cancel(UUID messageId) {
    return cancel(PendingQueries.byId(id(messageId)));
  }

  /** Deletes the pending command enqueued with this key unless a running handler holds it. */
  public CancelResult cancelByKey(String idempotencyKey) {
    return cancel(PendingQueries.byKey(tables, key(idempotencyKey)));
  }

  /**
   * Makes the pending command with this message id due at {@code dueAt} (a time in the past: due
   * now) unless a running handler holds it. Its failure count is kept.
   */
  public RescheduleResult reschedule(UUID messageId, Instant dueAt) {
    QueryPart which = PendingQueries.byId(id(messageId));
    return reschedule(which, at(dueAt));
  }

  /** As {@link #reschedule(UUID, Instant)}, for the command enqueued with this key. */
  public RescheduleResult rescheduleByKey(String idempotencyKey, Instant dueAt) {
    QueryPart which = PendingQueries.byKey(tables, key(idempotencyKey));
    return reschedule(which, at(dueAt));
  }

  private Optional<PendingCommand> find(QueryPart which, String key) {
    PendingQueries.Row r =
        Transactions.inNew(
            dataSource,
            "reading a pending command",
            tx -> PendingQueries.find(tx.dsl(), tables, which));
    if (r == null) {
      return Optional.empty();
    }
    PendingCommand.State state;
    boolean leased = r.leasedBy() != null && r.later();
    if (leased) {
      state = PendingCommand.State.LEASED;
    } else if (r.later()) {
      state = PendingCommand.State.SCHEDULED;
    } else {
      state = PendingCommand.State.DUE;
    }
    return Optional.of(
        new PendingCommand(
            r.messageId(),
            r.type(),
            key,
            r.correlationId(),
            r.enqueuedAt(),
            r.deliverAt(),
            r.failures(),
            state,
            state == PendingCommand.State.LEASED ? r.leasedBy() : null,
            state == PendingCommand.State.LEASED ? r.deliverAt() : null));
  }

  private CancelResult cancel(QueryPart which) {
    PendingQueries.Written w =
        Transactions.inNew(
            dataSource,
            "cancelling a pending command",
            tx -> PendingQueries.cancel(tx.dsl(), tables, which));
    if (w.written()) {
      return CancelResult.CANCELLED;
    }
    return w.messageId() == null ? CancelResult.NOT_FOUND : CancelResult.HELD;
  }

  private RescheduleResult reschedule(QueryPart which, Instant at) {
    PendingQueries.Written w =
        Transactions.inNew(
            dataSource,
            "rescheduling a pending command",
            tx -> PendingQueries.reschedule(tx.dsl(), tables, which, at));
    if (w.written()) {
      return RescheduleResult.RESCHEDULED;
    }
    return w.messageId() == null ? RescheduleResult.NOT_FOUND : RescheduleResult.HELD;
  }

  private static UUID id(UUID messageId) {
    if (messageId == null) {
      throw new IllegalArgumentException("messageId must not be null");
    }
    return messageId;
  }

  private static String key(String idempotencyKey) {
    if (idempotencyKey == null) {
      throw new IllegalArgumentException("idempotencyKey must not be null");
    }
    return Inputs.key("idempotencyKey", idempotencyKey);
  }

  private static Instant at(Instant dueAt) {
    if (dueAt == null) {
      throw new IllegalArgumentException("dueAt must not be null");
    }
    return Inputs.instant("dueAt", dueAt);
  }
}
