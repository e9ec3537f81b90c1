package org.messagepump.commands;

import java.util.UUID;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;

/**
 * What a {@link CommandHandler} gets besides its command: the delivery's transaction, the envelope,
 * the attempt number, and {@link #enqueue} for follow-up commands that commit (or roll back) with
 * the handler's other writes.
 */
public final class CommandContext {

  private final CommandQueue queue;
  private final Tx tx;
  private final Envelope envelope;
  private final int attempt;

  CommandContext(CommandQueue queue, Tx tx, Envelope envelope, int attempt) {
    this.queue = queue;
    this.tx = tx;
    this.envelope = envelope;
    this.attempt = attempt;
  }

  /** The delivery's open transaction; the handler writes through it and never commits. */
  public Tx tx() {
    return tx;
  }

  /** The command as stored: ids, type, headers, payload, enqueue time. */
  public Envelope envelope() {
    return envelope;
  }

  /** The command's message id. */
  public UUID messageId() {
    return UUID.fromString(envelope.messageId());
  }

  /** Which attempt this is: 1 the first time, {@code failures + 1} after failures. */
  public int attempt() {
    return attempt;
  }

  /**
   * The correlation id follow-ups inherit: the command's own, or its message id when it has none
   * (it starts the conversation).
   */
  public String correlationId() {
    return envelope.correlationId() != null ? envelope.correlationId() : envelope.messageId();
  }

  /** Enqueues a follow-up command in this transaction, due now. */
  public EnqueueResult enqueue(Object command) {
    return enqueue(command, EnqueueOptions.defaults());
  }

  /**
   * Enqueues a follow-up command in this transaction: its causation id is this command's id, its
   * correlation id is inherited unless {@code options} sets one.
   */
  public EnqueueResult enqueue(Object command, EnqueueOptions options) {
    return queue.enqueue(tx, command, followUp(options));
  }

  /** Enqueues an already-encoded follow-up command in this transaction (same ids as above). */
  public EnqueueResult enqueueRaw(String type, byte[] payload, EnqueueOptions options) {
    return queue
        .enqueueAll(tx, java.util.List.of(NewCommand.raw(type, payload, followUp(options))))
        .get(0);
  }

  private EnqueueOptions followUp(EnqueueOptions options) {
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    EnqueueOptions o = options.withCausationId(envelope.messageId());
    return options.correlationId() == null ? o.withCorrelationId(correlationId()) : o;
  }
}
