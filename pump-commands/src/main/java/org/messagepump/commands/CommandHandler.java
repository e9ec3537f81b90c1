package org.messagepump.commands;

/**
 * Handles one command of type {@code C} inside the delivery's transaction. Returning normally
 * commits the handler's writes and deletes the command; throwing {@link
 * org.messagepump.core.BusyException} retries it soon without counting a failure; any other
 * exception rolls the handler's writes back and counts a failure (retried with backoff, parked past
 * {@code maxFailures}).
 *
 * @param <C> the command class (or {@code byte[]} for raw handlers)
 */
@FunctionalInterface
public interface CommandHandler<C> {

  /** Handles {@code command}; writes through {@code context.tx()} commit with the delivery. */
  void handle(C command, CommandContext context) throws Exception;
}
