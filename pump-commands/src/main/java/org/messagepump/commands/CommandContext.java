package org.messagepump.commands;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.messagepump.core.DeliveryContext;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;

/**
 * What a {@link CommandHandler} gets besides its command: the {@link DeliveryContext} every handler
 * gets (the delivery's transaction, the attempt, the command's ids, type and headers), the stored
 * envelope, the typed {@link #commandId()}, and {@link #enqueue} for follow-up commands that commit
 * (or roll back) with the handler's other writes.
 */
public final class CommandContext implements DeliveryContext {

  private final CommandQueue queue;
  private final Tx tx;
  private final Envelope envelope;
  private final int attempt;
  private final Long leaseToken;

  CommandContext(CommandQueue queue, Tx tx, Envelope envelope, int attempt, Long leaseToken) {
    this.queue = queue;
    this.tx = tx;
    this.envelope = envelope;
    this.attempt = attempt;
    this.leaseToken = leaseToken;
  }

  /**
   * The delivery's open transaction; the handler writes through it and never commits. In lease mode
   * there is none: {@link IllegalStateException}, as for {@link #enqueue}; the handler opens its
   * own transactions and fences its writes with {@link #fencingToken()}.
   */
  @Override
  public Tx tx() {
    if (tx == null) {
      throw new IllegalStateException(
          "command "
              + envelope.messageId()
              + " runs in lease mode, without the pump's transaction: open your own, and use"
              + " fencingToken() in its writes for exactly-once effects");
    }
    return tx;
  }

  /**
   * Lease mode: the fencing token of this claim, a number that grows with every claim of the queue
   * and is never issued twice. A handler whose writes must take effect once records it with them
   * and refuses a write carrying an older token (docs/leases.md). Empty in transactional mode,
   * where the delivery's transaction already makes the handler's writes and the completion one.
   */
  public java.util.OptionalLong fencingToken() {
    return leaseToken == null
        ? java.util.OptionalLong.empty()
        : java.util.OptionalLong.of(leaseToken);
  }

  /** The command as stored: ids, type, headers, payload, enqueue time. */
  public Envelope envelope() {
    return envelope;
  }

  /** The command's message id in text form (a UUID); {@link #commandId()} is the same, typed. */
  @Override
  public String messageId() {
    return envelope.messageId();
  }

  /** The command's message id as a UUID, as {@link EnqueueResult#messageId()} returned it. */
  public UUID commandId() {
    return UUID.fromString(envelope.messageId());
  }

  /** The command's stable type name (the codec's name for its class, or the raw type). */
  @Override
  public String messageType() {
    return envelope.type();
  }

  /** Which attempt this is: 1 the first time, {@code failures + 1} after failures. */
  @Override
  public int attempt() {
    return attempt;
  }

  /**
   * The correlation id follow-ups inherit: the command's own, or its message id when it has none
   * (it starts the conversation). Never null for a command.
   */
  @Override
  public String correlationId() {
    return envelope.correlationId() != null ? envelope.correlationId() : envelope.messageId();
  }

  /** The id of the message that caused this command (as enqueued), or {@code null}. */
  @Override
  public String causationId() {
    return envelope.causationId();
  }

  /** The command's headers as enqueued (empty when it has none); never null. */
  @Override
  public Map<String, String> headers() {
    return envelope.headers();
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
    return queue.enqueue(tx(), command, followUp(options));
  }

  /** Enqueues an already-encoded follow-up command in this transaction (same ids as above). */
  public EnqueueResult enqueueRaw(String type, byte[] payload, EnqueueOptions options) {
    return queue.enqueueAll(tx(), List.of(NewCommand.raw(type, payload, followUp(options)))).get(0);
  }

  private EnqueueOptions followUp(EnqueueOptions options) {
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    EnqueueOptions o = options.withCausationId(envelope.messageId());
    return options.correlationId() == null ? o.withCorrelationId(correlationId()) : o;
  }
}
