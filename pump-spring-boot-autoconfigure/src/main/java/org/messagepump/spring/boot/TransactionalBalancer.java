package org.messagepump.spring.boot;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import javax.sql.DataSource;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.spring.boot.internal.CallerTransaction;

/**
 * Stores partition-keyed messages in the caller's Spring transaction: called from a
 * {@code @Transactional} method (or a handler), the message is visible to consumers when that
 * transaction commits, and gone if it rolls back. Called outside any transaction, each call commits
 * by itself. One {@link MessageBalancer} per group, created on first use with the shared options.
 */
public final class TransactionalBalancer {

  private final DataSource dataSource;
  private final Function<String, MessageBalancer> factory;
  private final Map<String, MessageBalancer> groups = new ConcurrentHashMap<>();

  /**
   * Stores through balancers made by {@code factory}, joining transactions on {@code dataSource}.
   */
  public TransactionalBalancer(DataSource dataSource, Function<String, MessageBalancer> factory) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.factory = Objects.requireNonNull(factory, "factory");
  }

  /**
   * The balancer of {@code group}; its {@link MessageBalancer#operations() operations()} give the
   * figures, parked keys, pausing, confirm and requeue.
   */
  public MessageBalancer balancer(String group) {
    return groups.computeIfAbsent(group, factory);
  }

  /** Stores a message with empty properties and returns its id. */
  public long storeMessage(String group, String partitionKey, byte[] content) {
    return storeMessage(group, partitionKey, content, null);
  }

  /**
   * Stores a message whose properties are a JSON object ({@code null} for none) and returns its id.
   * Bad input is refused with an {@link IllegalArgumentException} before anything is sent.
   */
  public long storeMessage(
      String group, String partitionKey, byte[] content, String propertiesJson) {
    MessageBalancer b = balancer(group);
    return CallerTransaction.run(
        dataSource,
        tx -> b.storeMessage(tx.connection(), partitionKey, content, propertiesJson),
        () -> b.storeMessage(partitionKey, content, propertiesJson));
  }
}
