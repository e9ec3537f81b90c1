package org.messagepump.balancer;

import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.messagepump.balancer.internal.GroupPauses;
import org.messagepump.balancer.internal.Json;
import org.messagepump.balancer.internal.LeaseQueries;
import org.messagepump.balancer.internal.Schema;
import org.messagepump.balancer.internal.StoreQueries;
import org.messagepump.balancer.internal.StoreQueries.GroupFigures;
import org.messagepump.core.Inputs;
import org.messagepump.core.Limits;
import org.messagepump.core.Meters;
import org.messagepump.core.MicrometerMeters;
import org.messagepump.core.ProducerHook;
import org.messagepump.core.ProducerHooks;
import org.messagepump.core.Transactions;
import org.messagepump.core.Tx;

/**
 * One partition group: stores messages by partition key, answers introspection from the database
 * (true for the whole cluster), confirms hand-offs, and builds the {@link BalancerDriver} a {@link
 * org.messagepump.core.MessagePump} runs. The name is kept from
 * {@code @targetprocess/balancer-core}.
 *
 * <pre>{@code
 * MessageBalancer tenant = MessageBalancer.builder(dataSource, "tenant-a").build();
 * long id = tenant.storeMessage("account-7", bytes, Map.of("retry", 0));
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
  private final Schema.Ctx ctx;
  private final BalancerMetrics metrics;
  private final ProducerHook producerHook;

  private MessageBalancer(Builder b) {
    this.dataSource = b.dataSource;
    this.group = b.group;
    this.limits = b.limits;
    this.ctx = Schema.Ctx.of(b.schema);
    this.metrics = new BalancerMetrics(b.meters, group, this::stats);
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
    return ctx.schema();
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
                              ctx, ctx.dsl(tx), group, partitionKey, content, props)));
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
                              ctx, ctx.dsl(tx), group, partitionKey, content, props)));
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
        ctx, ctx.dsl(tx), group, batch.keys, batch.contents, batch.properties);
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
                              ctx, ctx.dsl(t), group, partitionKey, content, props)));
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
    Balancer.checkName("partitionKey", partitionKey);
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

  /** Keys of this group that have messages or a lease (the whole cluster's view). */
  public long partitionCount() {
    return read("counting partitions", tx -> StoreQueries.partitionCount(tx.dsl(), group));
  }

  /** Messages stored in this group, waiting or in flight. */
  public long messageCount() {
    return read("counting messages", tx -> StoreQueries.messageCount(tx.dsl(), group));
  }

  /** Keys of this group in rotation order: the next to be served first. */
  public List<String> partitionKeys() {
    return read("listing partitions", tx -> StoreQueries.partitionKeys(tx.dsl(), group));
  }

  /** One key's figures, or empty when the key has no messages and no lease. */
  public Optional<PartitionStats> partitionStats(String partitionKey) {
    Balancer.checkName("partitionKey", partitionKey);
    return Optional.ofNullable(
        FromInternal.partitionStats(
            read(
                "reading partition stats",
                tx -> StoreQueries.partitionStats(tx.dsl(), group, partitionKey))));
  }

  /** The most keys {@link #partitionStats(java.util.Collection)} reads at once. */
  public static final int MAX_STATS_KEYS = 1_000;

  /**
   * The figures of several keys with one statement (a page of keys, as an operator's console shows
   * them): each key's as {@link #partitionStats(String)} gives it, in the order of {@code
   * partitionKeys}, a key without messages or a lease left out. Its cost grows with the keys asked
   * and their messages (one range of an index each), not with the group.
   *
   * @throws IllegalArgumentException for more than {@value #MAX_STATS_KEYS} keys or a key the
   *     balancer refuses; nothing is sent
   */
  public List<PartitionStats> partitionStats(java.util.Collection<String> partitionKeys) {
    Objects.requireNonNull(partitionKeys, "partitionKeys");
    if (partitionKeys.size() > MAX_STATS_KEYS) {
      throw new IllegalArgumentException(
          "at most " + MAX_STATS_KEYS + " keys at once: " + partitionKeys.size());
    }
    for (String key : partitionKeys) {
      Balancer.checkName("partitionKey", key);
    }
    List<String> keys = List.copyOf(partitionKeys);
    return read("reading partition stats", dsl -> StoreQueries.partitionStats(dsl, group, keys))
        .stream()
        .map(FromInternal::partitionStats)
        .toList();
  }

  /** This group's figures: keys, messages, leases, parked keys, oldest message age. */
  public GroupStats stats() {
    List<GroupFigures> all =
        read("reading group stats", tx -> StoreQueries.groups(tx.dsl(), group));
    return all.isEmpty()
        ? new GroupStats(group, 0, 0, 0, 0, Duration.ZERO)
        : FromInternal.groupStats(all.get(0));
  }

  /** Parked keys of this group with the reason each was parked, oldest first. */
  public Map<String, String> parkedKeys() {
    return read("listing parked keys", tx -> StoreQueries.parkedKeys(tx.dsl(), group));
  }

  /** The largest page of {@link #parkedKeys(ParkedKey, int)}. */
  public static final int MAX_PARKED_PAGE = 10_000;

  /**
   * A page of this group's parked keys, oldest parked first (ties by key), with the reason and when
   * each was parked: the keys after {@code after} (the last entry of the previous page), or from
   * the first when it is null. Each page is a range of the index of parked keys, however many keys
   * the group has.
   *
   * @throws IllegalArgumentException for a limit outside 1..{@value #MAX_PARKED_PAGE}; nothing is
   *     sent
   */
  public List<ParkedKey> parkedKeys(ParkedKey after, int limit) {
    if (limit < 1 || limit > MAX_PARKED_PAGE) {
      throw new IllegalArgumentException("limit must be 1.." + MAX_PARKED_PAGE + ": " + limit);
    }
    java.time.OffsetDateTime afterAt =
        after == null ? null : after.parkedAt().atOffset(java.time.ZoneOffset.UTC);
    return read(
        "listing parked keys",
        dsl ->
            StoreQueries.parkedKeys(
                    dsl, group, afterAt, after == null ? null : after.partitionKey(), limit)
                .stream()
                .map(r -> new ParkedKey(r.key(), r.reason(), r.parkedAt().toInstant()))
                .toList());
  }

  /** Puts a parked key back into the rotation with no failures; false when it was not parked. */
  public boolean unpark(String partitionKey) {
    Balancer.checkName("partitionKey", partitionKey);
    return Transactions.inNew(
        dataSource, "unparking a key", tx -> StoreQueries.unpark(ctx.dsl(tx), group, partitionKey));
  }

  /**
   * Pauses this group cluster-wide: from the next poll on, no pump of any process acquires its
   * messages (deliveries already being handled finish, hand-off leases run on, storing goes on).
   * Returns true when the group was not paused yet (a second pause keeps the first reason).
   *
   * @throws IllegalArgumentException when the reason is over {@link Limits#MAX_REASON_CHARS} UTF-8
   *     bytes or holds NUL; nothing is sent
   */
  public boolean pauseGroup(String reason) {
    if (reason != null) {
      Inputs.text("reason", reason, Limits.MAX_REASON_CHARS);
    }
    return Transactions.inNew(
        dataSource, "pausing a group", tx -> GroupPauses.pause(ctx.dsl(tx), group, reason));
  }

  /** Resumes this group after {@link #pauseGroup}; true when it was paused. */
  public boolean resumeGroup() {
    return Transactions.inNew(
        dataSource, "resuming a group", tx -> GroupPauses.resume(ctx.dsl(tx), group));
  }

  /** True while this group is paused cluster-wide ({@link #pauseGroup}). */
  public boolean isPaused() {
    return Transactions.inNew(
        dataSource, "reading a group's pause", tx -> GroupPauses.paused(ctx.dsl(tx), group));
  }

  /**
   * Confirms a handed-off message from any process: removes it and frees its key. A token that no
   * longer holds the lease is rejected ({@link LeaseResult#STALE_TOKEN}) and nothing changes.
   */
  public LeaseResult confirm(long messageId, UUID token) {
    Objects.requireNonNull(token, "token");
    return timed(
        "confirm",
        () ->
            counted(
                "confirm",
                Transactions.inNew(
                    dataSource,
                    "confirming a message",
                    tx -> LeaseQueries.confirm(tx, ctx, messageId, token))));
  }

  /** Like {@link #confirm(long, UUID)}, inside the caller's transaction on {@code connection}. */
  public LeaseResult confirm(Connection connection, long messageId, UUID token) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(token, "token");
    return timed(
        "confirm",
        () ->
            counted(
                "confirm",
                Transactions.inCaller(
                    Tx.of(connection),
                    "confirming a message",
                    tx -> LeaseQueries.confirm(tx, ctx, messageId, token))));
  }

  /** Moves a lease's expiry to {@code duration} from now by the database clock. */
  public LeaseResult extendLease(long messageId, UUID token, Duration duration) {
    Objects.requireNonNull(token, "token");
    Balancer.checkPositive("duration", duration);
    return timed(
        "extend",
        () ->
            counted(
                "extend",
                Transactions.inNew(
                    dataSource,
                    "extending a lease",
                    tx -> LeaseQueries.extend(ctx.dsl(tx), messageId, token, duration))));
  }

  /** Ends a lease and puts the message back at the front of its key, the key at the back. */
  public LeaseResult requeue(long messageId, UUID token) {
    return requeue(messageId, token, null);
  }

  /** Like {@link #requeue(long, UUID)}, replacing the properties with a JSON object. */
  public LeaseResult requeue(long messageId, UUID token, String propertiesJson) {
    Objects.requireNonNull(token, "token");
    String props =
        propertiesJson == null ? null : Json.object(propertiesJson, "properties", limits);
    return timed(
        "requeue",
        () ->
            counted(
                "requeue",
                Transactions.inNew(
                    dataSource,
                    "requeueing a message",
                    tx -> LeaseQueries.requeue(ctx.dsl(tx), messageId, token, props))));
  }

  /** A builder for the driver that hands this group's messages to {@code handler}. */
  public BalancerDriver.Builder driver(BalancedHandler handler) {
    return new BalancerDriver.Builder(this, Objects.requireNonNull(handler, "handler"));
  }

  BalancerMetrics metrics() {
    return metrics;
  }

  Schema.Ctx ctx() {
    return ctx;
  }

  private LeaseResult counted(String operation, LeaseQueries.Applied applied) {
    metrics.leaseOperation(operation, applied.result().name());
    if (applied.endToEnd() != null) {
      metrics.removed(applied.endToEnd());
    }
    return FromInternal.leaseResult(applied.result());
  }

  private <T> T read(String doing, Function<DSLContext, T> query) {
    return Transactions.inNew(dataSource, doing, tx -> query.apply(ctx.dsl(tx)));
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
    private String schema = Balancer.DEFAULT_SCHEMA;
    private Meters meters;
    private ProducerHook producerHook;

    private Builder(DataSource dataSource, String group) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
      this.group = Balancer.checkName("group", group);
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
     * The schema of the tables, as migrated by {@link Balancer#migrate(DataSource, String)}: lower
     * case letters, digits and {@code _}, at most {@value
     * org.messagepump.core.Inputs#MAX_SCHEMA_LENGTH} characters. Default {@value
     * Balancer#DEFAULT_SCHEMA}. Groups of different schemas never see each other's messages, and
     * their pumps listen on different channels.
     */
    public Builder schema(String schema) {
      this.schema = org.messagepump.balancer.internal.Schema.checkSchema("schema", schema);
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
