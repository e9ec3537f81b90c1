package org.messagepump.core;

import java.util.Map;

/**
 * What every handler gets besides its message, whatever the driver: the delivery's open
 * transaction, the attempt, and the message's identity and metadata. Each driver's context
 * (commands, event streams, balancer) implements it and adds its own: a way to enqueue, append or
 * store in the same transaction, and where the message sits.
 *
 * <p>One handler shape everywhere: {@code (message, context)}.
 */
public interface DeliveryContext {

  /**
   * The delivery's open transaction: the handler writes through it and never commits; its writes
   * commit together with the driver's bookkeeping, or not at all.
   */
  Tx tx();

  /** Which attempt this is: 1 the first time, {@code failures + 1} after failures. */
  int attempt();

  /** The message's id (a UUID for commands and events, a number for balancer messages). */
  String messageId();

  /** The message's stable type name. */
  String messageType();

  /** The id shared by every message of one conversation, or {@code null}. */
  String correlationId();

  /** The id of the message that caused this one, or {@code null}. */
  String causationId();

  /** The message's string headers (empty when it has none); never null. */
  Map<String, String> headers();
}
