package org.messagepump.balancer;

/**
 * Handles one message of a partition group inside the pump's transaction; its writes through {@code
 * ctx.tx()} (and the messages it stores with {@link BalancedContext#store}) commit together with
 * the bookkeeping. Throwing is a {@link Result.Failed}.
 */
@FunctionalInterface
public interface BalancedHandler {

  /** Handles {@code message} and says what became of it. */
  Result handle(BalancedMessage message, BalancedContext ctx) throws Exception;
}
