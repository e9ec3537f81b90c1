package org.messagepump.core;

import java.util.Map;

/**
 * Sees every write of a producer: each enqueue of the command queue (single, batch, raw, delayed,
 * the scheduler's ticks), each append of the event store and each store of a partition group,
 * inside the caller's transaction or in one of its own. It is registered once, with {@code
 * producerHook(hook)} on {@code CommandQueue.Builder}, {@code EventStore.Builder} and {@code
 * MessageBalancer.Builder}, and needs no code at the call sites.
 *
 * <p>For each write the producer calls {@link #beforeSend} once, after its input was validated and
 * just before anything is sent to the database, on the producer's thread. The returned {@link Send}
 * gives headers that are added to every message of the write (headers the caller passed explicitly
 * win over them), and is told whether the write succeeded. A tracing integration starts a producer
 * span in {@code beforeSend}, injects its context as the headers, and ends the span in {@link
 * Send#sent} or {@link Send#failed}: pump-opentelemetry's {@code PumpTracing.producerHook()}, and
 * the Spring Boot starter's Observation-based hook.
 *
 * <p>A hook must be quick and must not block: it runs on every write. An exception it throws is
 * logged and the write goes on without its headers. Without a hook a producer does no extra work.
 */
@FunctionalInterface
public interface ProducerHook {

  /**
   * Called once per write, before it is sent.
   *
   * @param outgoing what is about to be written
   * @return the headers to add and the callbacks for the write's end; never null
   */
  Send beforeSend(Outgoing outgoing);

  /**
   * What a write is about to send.
   *
   * @param driver the producing module: {@code "commands"}, {@code "eventstream"} or {@code
   *     "balancer"}
   * @param destination where the messages go: the message type of a command or event (when every
   *     message of the write has the same one), the partition group of a balancer message; {@code
   *     null} when the messages of one write have different types
   * @param messageCount how many messages the write holds (at least 1)
   * @param messageId the message's id when the write holds one message whose id is known before it
   *     is sent (commands, events), else {@code null}; {@link Send#sent} gives the id once written
   */
  record Outgoing(String driver, String destination, int messageCount, String messageId) {

    /**
     * @throws IllegalArgumentException for a blank driver or a message count under 1
     */
    public Outgoing {
      if (driver == null || driver.isBlank()) {
        throw new IllegalArgumentException("driver must not be blank");
      }
      if (messageCount < 1) {
        throw new IllegalArgumentException("messageCount must be at least 1: " + messageCount);
      }
    }
  }

  /** One write seen by a hook: its headers and its end. */
  interface Send {

    /**
     * The headers to add to every message of the write (for example {@code traceparent}); a header
     * the caller set explicitly is kept and this one dropped. Never null; empty adds nothing.
     */
    Map<String, String> headers();

    /**
     * The write succeeded (in the caller's transaction, it is not committed yet).
     *
     * @param messageId the id of the message when the write held one message, else {@code null}
     */
    void sent(String messageId);

    /** The write failed with {@code failure}; nothing of it was written. */
    void failed(Throwable failure);
  }
}
