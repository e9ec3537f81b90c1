package org.messagepump.balancer;

import org.messagepump.core.Tx;

/**
 * Handles one message of a partition group inside the pump's transaction; its writes through {@code
 * tx} commit together with the bookkeeping. Throwing is a {@link Result.Failed}.
 */
@FunctionalInterface
public interface BalancedHandler {

  /** Handles {@code message} and says what became of it. */
  Result handle(BalancedMessage message, Tx tx) throws Exception;
}
