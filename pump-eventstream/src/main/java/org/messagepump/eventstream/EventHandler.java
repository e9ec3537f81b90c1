package org.messagepump.eventstream;

/**
 * Handles one event type for a handler. Its writes through {@link EventContext#tx()} (and the
 * events it appends with {@link EventContext#append}) commit together with the checkpoint advance;
 * throwing fails the delivery (the stream is postponed for this handler, the event is never
 * skipped).
 *
 * @param <E> the event class
 */
@FunctionalInterface
public interface EventHandler<E> {

  /** Handles {@code event}; on return the checkpoint advances to {@code ctx.offset() + 1}. */
  void handle(E event, EventContext ctx) throws Exception;
}
