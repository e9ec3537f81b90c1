package org.messagepump.balancer;

/**
 * Handles one message of a partition group inside the pump's transaction; its writes through {@code
 * ctx.tx()} (and the messages it stores with {@link BalancedContext#store}) commit together with
 * the bookkeeping.
 *
 * <p>Return normally with the decision ({@link Result#ok()}, {@link Result#requeue()}, {@link
 * Result#handoff()}). Throw {@link org.messagepump.core.BusyException} when the target is
 * temporarily unavailable: the key keeps its place and is retried after the exception's {@code
 * retryAfter} (at least the pump's backoff base, at most its cap), or after the backoff base
 * without one, and no failure is counted. Any other exception is a failure: the handler's writes
 * are rolled back and the key is postponed with backoff (parked past the pump's {@code
 * maxFailures}).
 */
@FunctionalInterface
public interface BalancedHandler {

  /** Handles {@code message} and says what became of it. */
  Result handle(BalancedMessage message, BalancedContext ctx) throws Exception;
}
