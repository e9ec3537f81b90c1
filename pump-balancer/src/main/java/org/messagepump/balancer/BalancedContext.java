package org.messagepump.balancer;

import java.time.Instant;
import java.util.Map;
import org.messagepump.core.DeliveryContext;
import org.messagepump.core.Envelope;
import org.messagepump.core.Tx;

/**
 * What a {@link BalancedHandler} gets besides its message: the delivery's transaction, the attempt,
 * the message's identity, where it sits (group and partition key), and {@link #store} for messages
 * of the same group that commit (or roll back) with the handler's other writes and the delivery's
 * bookkeeping.
 *
 * <p>The message type is {@value BalancerDriver#MESSAGE_TYPE} for every balancer message: the
 * balancer stores opaque bytes, and the group is where a message sits, not what it is ({@link
 * #group()}). Balancer messages have no correlation or causation ids.
 */
public final class BalancedContext implements DeliveryContext {

  private final MessageBalancer balancer;
  private final Tx tx;
  private final Envelope envelope;
  private final int attempt;
  private final String partitionKey;

  BalancedContext(
      MessageBalancer balancer, Tx tx, Envelope envelope, int attempt, String partitionKey) {
    this.balancer = balancer;
    this.tx = tx;
    this.envelope = envelope;
    this.attempt = attempt;
    this.partitionKey = partitionKey;
  }

  /**
   * The delivery's open transaction; the handler writes through it and never commits. In lease mode
   * there is none: {@link IllegalStateException}, as for {@link #store}; the handler opens its own
   * transactions (docs/leases.md).
   */
  @Override
  public Tx tx() {
    if (tx == null) {
      throw new IllegalStateException(
          "message "
              + envelope.messageId()
              + " runs in lease mode, without the pump's transaction: open your own, and use the"
              + " message's handoffToken() as the claim's fencing token");
    }
    return tx;
  }

  /**
   * Which attempt this is: 1 the first time, the key's {@code failures + 1} after failures.
   * (Expired hand-off leases are counted apart, in {@link BalancedMessage#attempts()}.)
   */
  @Override
  public int attempt() {
    return attempt;
  }

  /** The message's 64-bit id ({@link BalancedMessage#id()}) as a decimal string. */
  @Override
  public String messageId() {
    return envelope.messageId();
  }

  /** Always {@value BalancerDriver#MESSAGE_TYPE}: the balancer stores opaque bytes. */
  @Override
  public String messageType() {
    return envelope.type();
  }

  /** Always {@code null}: balancer messages carry no correlation id. */
  @Override
  public String correlationId() {
    return null;
  }

  /** Always {@code null}: balancer messages carry no causation id. */
  @Override
  public String causationId() {
    return null;
  }

  /**
   * The delivery's headers: {@value BalancerDriver#PARTITION_GROUP_HEADER} and {@value
   * BalancerDriver#PARTITION_KEY_HEADER}.
   */
  @Override
  public Map<String, String> headers() {
    return envelope.headers();
  }

  /** The partition group the message is in (the pump's {@link MessageBalancer#group()}). */
  public String group() {
    return balancer.group();
  }

  /** The partition key of the message. */
  public String partitionKey() {
    return partitionKey;
  }

  /** When the message was stored, by the database clock. */
  public Instant receivedAt() {
    return envelope.createdAt();
  }

  /**
   * Stores a message with empty properties into this group, in the delivery's transaction: it is
   * visible to consumers when the delivery commits, and gone if it rolls back. Checked as {@link
   * MessageBalancer#storeMessage(String, byte[], String)} checks, before anything is sent.
   *
   * @return the new message's id
   */
  public long store(String partitionKey, byte[] content) {
    return balancer.store(tx(), partitionKey, content, (String) null);
  }

  /**
   * Stores a message whose properties are a map (written as a JSON object) into this group, in the
   * delivery's transaction. Checked as {@link MessageBalancer#storeMessage(String, byte[], Map)}
   * checks, before anything is sent.
   *
   * @return the new message's id
   */
  public long store(String partitionKey, byte[] content, Map<String, ?> properties) {
    return balancer.store(tx(), partitionKey, content, properties);
  }

  /** Names the delivery without its data (the partition key may be personal data). */
  @Override
  public String toString() {
    return "BalancedContext[group="
        + balancer.group()
        + ", messageId="
        + envelope.messageId()
        + ", attempt="
        + attempt
        + "]";
  }
}
