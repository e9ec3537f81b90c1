package org.messagepump.commands;

/** What {@link PendingCommands#reschedule} did. */
public enum RescheduleResult {
  /** The command is now due at the time given. */
  RESCHEDULED,
  /**
   * No such pending command: never enqueued, already handled, parked as a dead letter, cancelled,
   * or (by key) a key that names no command.
   */
  NOT_FOUND,
  /**
   * A running handler holds it (a transactional pump's handling transaction, or a lease that has
   * not expired); nothing changed.
   */
  HELD
}
