package org.messagepump.eventstream;

/**
 * Handles one event type for a handler that keeps its own checkpoint per stream (for example a
 * projection in another store) and reports it: the optimistic path.
 *
 * @param <E> the event class
 */
@FunctionalInterface
public interface ProjectionHandler<E> {

  /**
   * Handles {@code event} and returns the next offset the projection holds for {@code
   * ctx.streamId()} after handling it. Equal to {@code ctx.offset() + 1}, the checkpoint advances;
   * any other value is an optimistic-concurrency conflict: it is logged and the checkpoint is set
   * to the returned value (events are then redelivered or skipped accordingly).
   */
  long handle(E event, EventContext ctx) throws Exception;
}
