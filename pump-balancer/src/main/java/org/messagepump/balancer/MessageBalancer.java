package org.messagepump.balancer;

import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.balancer.internal.BalancerTables;
import org.messagepump.balancer.internal.Json;
import org.messagepump.balancer.internal.StoreQueries;
import org.messagepump.core.Limits;
import org.messagepump.core.ProducerHook;
import org.messagepump.core.ProducerHooks;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.MicrometerMeters;
import org.messagepump.core.spi.Transactions;

/**
 * The producer face of the partition balancer, for one partition group: stores messages by
 * partition key and makes the {@link BalancerDriver} a {@link
 * org.messagepump.core.engine.MessagePump} runs; {@link #operations()} is the operator face of its
 * schema (figures, parked keys, pausing, confirming hand-offs). The name is kept from
 * {@code @targetprocess/balancer-core}.
 *
 * <pre>{@code
 * MessageBalancer tenant = MessageBalancer.builder(dataSource, "tenant-a").build();
 * long id = tenant.storeMessage("account-7", bytes, Map.of("retry", 0));
 * BalancerDriver driver =
 *     tenant.driver(BalancedHandlers.builder().on((message, ctx) -> Result.ok()).build());
 * }</pre>
 */
public final class MessageBalancer {

  /** Default largest content accepted by {@code storeMessage}: 1 MiB. */
  public static final int DEFAULT_MAX_CONTENT_BYTES = Limits.DEFAULT_MAX_PAYLOAD_BYTES;

  /**
   * Largest partition key, group name and lease owner, in UTF-8 bytes ({@link
   * Limits#MAX_KEY_BYTES}): group and key together stay below PostgreSQL's B-tree entry limit.
   */
  public static final int MAX_NAME_LENGTH = Limits.MAX_KEY_BYTES;

  private static final String EMPTY_OBJECT = "{}";

  private final DataSource dataSource;
  private final String group;
  private final Limits limits;
  private final BalancerTables tables;
  private final BalancerMetrics metrics;
  private final BalancerOperations operations;
  private final ProducerHook producerHook;

  private MessageBalancer(Builder b) {
    this.dataSource = b.dataSource;
    this.group = b.group;
    this.limits = b.limits;
    this.tables = BalancerTables.of(b.schema);
    // The gauges read the group's figures through an operator of their own (not metered).
    BalancerOperations gauges = BalancerOperations.ofGroup(dataSource, tables, limits, null);
    this.metrics = new BalancerMetrics(b.meters, group, () -> gauges.stats(group));
    this.operations = BalancerOperations.ofGroup(dataSource, tables, limits, metrics);
    this.producerHook = b.producerHook;
  }

  /** A builder for the partition group {@code group} stored in {@code dataSource}. */
  public static Builder builder(DataSource dataSource, String group) {
    return new Builder(dataSource, group);
  }

  /** The group with default options. */
  public static MessageBalancer create(DataSource dataSource, String group) {
    return builder(dataSource, group).build();
  }

  /** The partition group's name. */
  public String group() {
    return group;
  }

  /** The data source messages are stored in. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** The largest content accepted, in bytes ({@link Limits#maxPayloadBytes()}). */
  public int maxContentBytes() {
    return limits.maxPayloadBytes();
  }

  /** The limits producers' input is checked against. */
  public Limits limits() {
    return limits;
  }

  /** The schema this group's tables are in. */
  public String schema() {
    return tables.schema();
  }

  /** Stores a message with empty properties in its own transaction and returns its id. */
  public long storeMessage(String partitionKey, byte[] content) {
    return storeMessage(partitionKey, content, EMPTY_OBJECT);
  }

  /** Stores a message whose properties are a map (written as a JSON object). */
  public long storeMessage(String partitionKey, byte[] content, Map<String, ?> properties) {
    validate(partitionKey, content);
    return storeMessage(partitionKey, content, Json.write(properties, "properties", limits));
  }

  /**
   * Stores a message in its own transaction and returns its id.
   *
   * @param partitionKey not blank, no NUL, at most {@value #MAX_NAME_LENGTH} UTF-8 bytes
   * @param content at most {@link Limits#maxPayloadBytes()} bytes
   * @param propertiesJson a JSON object of at most {@link Limits#maxPropertiesBytes()} bytes
   *     without the {@code \u0000} escape, or {@code null} for {@code {}}
   * @throws NullPointerException for a null key or content
   * @throws IllegalArgumentException naming the argument and the limit for a blank, NUL-holding or
   *     too long key, too large content, or properties that are not such a JSON object; nothing is
   *     sent to the database then
   */
  public long storeMessage(String partitionKey, byte[] content, String propertiesJson) {
    String checked = validate(partitionKey, content, propertiesJson);
    ProducerHook.Send send = startSend(1);
    String props = withHeaders(checked, send);
    long id;
    try {
      id =
          timed(
              "store",
              () ->
                  Transactions.inNew(
                      dataSource,
                      "storing a message",
                      tx ->
                          StoreQueries.store(
                              tx.connection(), tables, group, partitionKey, content, props)));
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, id);
    return id;
  }

  /**
   * Stores a message inside the caller's transaction on {@code connection} (autocommit off; it is
   * visible to consumers when the caller commits) and returns its id. Storing holds a lock that
   * makes other producers of the same key wait until the caller's transaction ends.
   */
  public long storeMessage(
      Connection connection, String partitionKey, byte[] content, String propertiesJson) {
    Objects.requireNonNull(connection, "connection");
    String checked = validate(partitionKey, content, propertiesJson);
    ProducerHook.Send send = startSend(1);
    String props = withHeaders(checked, send);
    long id;
    try {
      id =
          timed(
              "store",
              () ->
                  Transactions.inCaller(
                      Tx.of(connection),
                      "storing a message",
                      tx ->
                          StoreQueries.store(
                              tx.connection(), tables, group, partitionKey, content, props)));
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, id);
    return id;
  }

  /**
   * Stores many messages in one transaction of its own with multi-row inserts and returns their ids
   * in input order (balancer-core's {@code createMessages}). Messages of one key keep their order
   * in the list. Every element is checked as {@link #storeMessage(String, byte[], String)} checks
   * before anything is sent; an empty list sends nothing.
   *
   * @throws NullPointerException for a null list, element, key or content (naming its index)
   * @throws IllegalArgumentException naming the index, the argument and the limit
   */
  public long[] storeMessages(List<NewMessage> messages) {
    Batch checked = validate(messages);
    if (checked.keys.isEmpty()) {
      return new long[0];
    }
    ProducerHook.Send send = startSend(checked.keys.size());
    Batch batch = withHeaders(checked, send);
    long[] ids;
    try {
      ids =
          timed(
              "store_batch",
              () -> Transactions.inNew(dataSource, "storing messages", tx -> storeMany(tx, batch)));
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, ids);
    return ids;
  }

  /**
   * Like {@link #storeMessages(List)}, inside the caller's transaction on {@code connection}
   * (autocommit off; visible to consumers when the caller commits). Other producers of the same
   * keys wait until the caller's transaction ends. Invalid input is refused before anything is
   * sent, so the caller's transaction survives it.
   */
  public long[] storeMessages(Connection connection, List<NewMessage> messages) {
    Objects.requireNonNull(connection, "connection");
    Batch checked = validate(messages);
    if (checked.keys.isEmpty()) {
      return new long[0];
    }
    ProducerHook.Send send = startSend(checked.keys.size());
    Batch batch = withHeaders(checked, send);
    long[] ids;
    try {
      ids =
          timed(
              "store_batch",
              () ->
                  Transactions.inCaller(
                      Tx.of(connection), "storing messages", tx -> storeMany(tx, batch)));
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, ids);
    return ids;
  }

  /** Checked messages as parallel lists. */
  private record Batch(List<String> keys, List<byte[]> contents, List<String> properties) {}

  private Batch validate(List<NewMessage> messages) {
    Objects.requireNonNull(messages, "messages");
    List<String> keys = new java.util.ArrayList<>(messages.size());
    List<byte[]> contents = new java.util.ArrayList<>(messages.size());
    List<String> properties = new java.util.ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) {
      NewMessage m = messages.get(i);
      try {
        Objects.requireNonNull(m, "the message");
        properties.add(validate(m.partitionKey(), m.content(), m.propertiesJson()));
      } catch (NullPointerException e) {
        throw new NullPointerException("messages[" + i + "]: " + e.getMessage());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("messages[" + i + "]: " + e.getMessage(), e);
      }
      keys.add(m.partitionKey());
      contents.add(m.content());
    }
    return new Batch(keys, contents, properties);
  }

  private long[] storeMany(Tx tx, Batch batch) {
    return StoreQueries.storeMany(
        tx.connection(), tables, group, batch.keys, batch.contents, batch.properties);
  }

  /** Stores into this group inside {@code tx} ({@link BalancedContext#store}); checked first. */
  long store(Tx tx, String partitionKey, byte[] content, String propertiesJson) {
    String props = validate(partitionKey, content, propertiesJson);
    return storeIn(tx, partitionKey, content, props);
  }

  /** As {@link #store(Tx, String, byte[], String)}, properties as a map. */
  long store(Tx tx, String partitionKey, byte[] content, Map<String, ?> properties) {
    validate(partitionKey, content);
    String props = Json.write(properties, "properties", limits);
    return storeIn(tx, partitionKey, content, props);
  }

  private long storeIn(Tx tx, String partitionKey, byte[] content, String checked) {
    ProducerHook.Send send = startSend(1);
    String props = withHeaders(checked, send);
    long id;
    try {
      id =
          timed(
              "store",
              () ->
                  Transactions.inCaller(
                      tx,
                      "storing a message",
                      t ->
                          StoreQueries.store(
                              t.connection(), tables, group, partitionKey, content, props)));
    } catch (RuntimeException | Error e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    sent(send, id);
    return id;
  }

  /** Starts the producer hook's send for a store, or null without a hook (no allocation). */
  private ProducerHook.Send startSend(int count) {
    return producerHook == null
        ? null
        : ProducerHooks.start(producerHook, "balancer", group, count, null);
  }

  /** {@code props} with the hook's headers as top-level string properties (its own win). */
  private String withHeaders(String props, ProducerHook.Send send) {
    if (send == null) {
      return props;
    }
    try {
      return Json.withDefaults(props, ProducerHooks.headers(send), "properties", limits);
    } catch (RuntimeException e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
  }

  private Batch withHeaders(Batch batch, ProducerHook.Send send) {
    if (send == null) {
      return batch;
    }
    Map<String, String> headers = ProducerHooks.headers(send);
    List<String> properties = new java.util.ArrayList<>(batch.properties.size());
    try {
      for (int i = 0; i < batch.properties.size(); i++) {
        properties.add(
            Json.withDefaults(
                batch.properties.get(i), headers, "messages[" + i + "]: properties", limits));
      }
    } catch (RuntimeException e) {
      ProducerHooks.failed(send, e);
      throw e;
    }
    return new Batch(batch.keys, batch.contents, properties);
  }

  private static void sent(ProducerHook.Send send, long id) {
    if (send != null) {
      ProducerHooks.sent(send, Long.toString(id));
    }
  }

  private static void sent(ProducerHook.Send send, long[] ids) {
    if (send != null) {
      ProducerHooks.sent(send, ids.length == 1 ? Long.toString(ids[0]) : null);
    }
  }

  private String validate(String partitionKey, byte[] content, String propertiesJson) {
    validate(partitionKey, content);
    return propertiesJson == null
        ? EMPTY_OBJECT
        : Json.object(propertiesJson, "properties", limits);
  }

  private void validate(String partitionKey, byte[] content) {
    Checks.name("partitionKey", partitionKey);
    if (content == null) {
      throw new NullPointerException("content must not be null");
    }
    if (content.length > limits.maxPayloadBytes()) {
      throw new IllegalArgumentException(
          "content is "
              + content.length
              + " bytes, more than maxContentBytes (Limits.maxPayloadBytes) "
              + limits.maxPayloadBytes());
    }
  }

  /**
   * The operator of this group's data source and schema ({@link BalancerOperations}): figures,
   * parked keys, pausing, and the lease operations on handed-off messages (confirm, extend,
   * requeue), which count into this group's meters and check requeue properties against this
   * group's {@link #limits()}.
   */
  public BalancerOperations operations() {
    return operations;
  }

  /**
   * The driver that hands this group's messages to the handler of {@code handlers}, with {@link
   * BalancerDriverOptions#defaults()}.
   */
  public BalancerDriver driver(BalancedHandlers handlers) {
    return driver(handlers, BalancerDriverOptions.defaults());
  }

  /**
   * The driver that hands this group's messages to the handler of {@code handlers}, run with {@code
   * options}.
   *
   * @throws IllegalArgumentException for a null argument, or options that do not go together (lease
   *     mode without lock partition or with more than one message per turn; more than one message
   *     per turn without lock partition)
   */
  public BalancerDriver driver(BalancedHandlers handlers, BalancerDriverOptions options) {
    if (handlers == null) {
      throw new IllegalArgumentException("handlers must not be null");
    }
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    return new BalancerDriver(this, handlers.handler(), options);
  }

  BalancerMetrics metrics() {
    return metrics;
  }

  BalancerTables tables() {
    return tables;
  }

  private <T> T timed(String operation, java.util.function.Supplier<T> work) {
    long start = System.nanoTime();
    try {
      return work.get();
    } finally {
      metrics.storage(operation, System.nanoTime() - start);
    }
  }

  /**
   * Builds a {@link MessageBalancer}; setters reject bad values with an {@link
   * IllegalArgumentException} naming the option.
   */
  public static final class Builder {
    private final DataSource dataSource;
    private final String group;
    private Limits limits = Limits.defaults();
    private String schema = BalancerOperations.DEFAULT_SCHEMA;
    private Meters meters;
    private ProducerHook producerHook;

    private Builder(DataSource dataSource, String group) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
      this.group = Checks.name("group", group);
    }

    /**
     * Largest content {@code storeMessage} accepts, in bytes (1 to {@link
     * Limits#HARD_MAX_PAYLOAD_BYTES}): sets {@link Limits#maxPayloadBytes()}. Default 1 MiB.
     */
    public Builder maxContentBytes(int maxContentBytes) {
      if (maxContentBytes < 1 || maxContentBytes > Limits.HARD_MAX_PAYLOAD_BYTES) {
        throw new IllegalArgumentException(
            "maxContentBytes must be between 1 and "
                + Limits.HARD_MAX_PAYLOAD_BYTES
                + ": "
                + maxContentBytes);
      }
      this.limits = limits.withMaxPayloadBytes(maxContentBytes);
      return this;
    }

    /**
     * The limits producers' input is checked against: {@link Limits#maxPayloadBytes()} for content,
     * {@link Limits#maxPropertiesBytes()} for properties. Default {@link Limits#defaults()}.
     */
    public Builder limits(Limits limits) {
      this.limits = Objects.requireNonNull(limits, "limits must not be null");
      return this;
    }

    /**
     * The schema of the tables, as migrated by {@link BalancerOperations#migrate()}: lower case
     * letters, digits and {@code _}, at most {@value
     * org.messagepump.core.spi.Inputs#MAX_SCHEMA_LENGTH} characters. Default {@value
     * BalancerOperations#DEFAULT_SCHEMA}. Groups of different schemas never see each other's
     * messages, and their pumps listen on different channels.
     */
    public Builder schema(String schema) {
      this.schema = org.messagepump.balancer.internal.BalancerTables.schemaName(schema);
      return this;
    }

    /** Where to register the {@code messagepump.balancer.*} meters; none by default. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meters =
          MicrometerMeters.of(
              Objects.requireNonNull(meterRegistry, "meterRegistry must not be null"));
      return this;
    }

    /**
     * A hook called on every store ({@code storeMessage}, {@code storeMessages}, in the caller's
     * transaction or in one of its own, and {@link BalancedContext#store} from a handler), whose
     * headers are added to the message's properties as top-level strings (the properties' own win):
     * for example {@code PumpTracing.producerHook()}, which traces each store and carries its
     * context ({@value BalancerDriver#TRACEPARENT}, {@value BalancerDriver#TRACESTATE}) to the
     * handler. None by default.
     *
     * @throws IllegalArgumentException when {@code producerHook} is null
     */
    public Builder producerHook(ProducerHook producerHook) {
      if (producerHook == null) {
        throw new IllegalArgumentException("producerHook must not be null");
      }
      this.producerHook = producerHook;
      return this;
    }

    /** The group's balancer. */
    public MessageBalancer build() {
      return new MessageBalancer(this);
    }
  }
}
