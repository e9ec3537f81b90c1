package org.messagepump.commands;

/** What {@link PendingCommands#cancel} did. */
public enum CancelResult {
  /** The command was deleted from the queue: it will not be handled. */
  CANCELLED,
  /**
   * No such pending command: never enqueued, already handled, parked as a dead letter, cancelled
   * before, or (by key) a key that names no command.
   */
  NOT_FOUND,
  /**
   * A running handler holds it (a transactional pump's handling transaction, or a lease that has
   * not expired); nothing changed. It is handled, or due again after a failure; try again then.
   */
  HELD
}
