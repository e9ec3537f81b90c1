package org.messagepump.balancer;

import java.sql.Connection;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.messagepump.balancer.internal.BalancerTables;
import org.messagepump.balancer.internal.Json;
import org.messagepump.balancer.internal.LeaseQueries;
import org.messagepump.balancer.internal.StoreQueries;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.core.Limits;
import org.messagepump.core.Pause;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.Migrations;
import org.messagepump.core.spi.Pauses;
import org.messagepump.core.spi.Transactions;

/**
 * The operator face of the partition balancer: everything that reads or changes the stored state of
 * one schema without a message's content — the schema migration, the grants of a DML-only role,
 * figures of every group or of one, parked keys, pausing, and the lease operations on handed-off
 * messages (by id and token, whatever their group). Per-group operations take the group's name
 * first (not blank, no NUL, at most {@link Limits#MAX_KEY_BYTES} UTF-8 bytes). Input is checked
 * before anything is sent ({@link IllegalArgumentException}); each call runs in a transaction of
 * its own unless it takes the caller's {@link Connection}.
 *
 * <pre>{@code
 * BalancerOperations ops = BalancerOperations.of(dataSource);
 * ops.migrate();
 * long waiting = ops.messageCount("tenant-a");
 * ops.unpark("tenant-a", "account-7");
 * }</pre>
 *
 * <p>{@link MessageBalancer#operations()} returns the operator of a group's data source and schema;
 * its lease operations also count into that group's meters.
 */
public final class BalancerOperations {

  /** The Flyway history table, in the balancer's schema. */
  public static final String HISTORY_TABLE = BalancerTables.HISTORY_TABLE;

  /** The default schema. */
  public static final String DEFAULT_SCHEMA = BalancerTables.SCHEMA;

  /** The most keys {@link #partitionStats(String, Collection)} reads at once. */
  public static final int MAX_STATS_KEYS = 1_000;

  /** The largest page of {@link #parkedKeys(String, ParkedKey, int)}. */
  public static final int MAX_PARKED_PAGE = 10_000;

  /** Longest role name of {@link #grantStatements}: PostgreSQL identifiers have 63 bytes. */
  private static final int MAX_ROLE_BYTES = 63;

  private final DataSource dataSource;
  private final BalancerTables tables;
  private final Limits limits;
  private final BalancerMetrics metrics; // null: lease operations are not metered

  private BalancerOperations(
      DataSource dataSource, BalancerTables tables, Limits limits, BalancerMetrics metrics) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.limits = limits;
    this.metrics = metrics;
  }

  /** The operator of the default schema {@value #DEFAULT_SCHEMA} in {@code dataSource}. */
  public static BalancerOperations of(DataSource dataSource) {
    return of(dataSource, DEFAULT_SCHEMA);
  }

  /**
   * The operator of {@code schema} in {@code dataSource}.
   *
   * @param schema lower-case letters, digits and {@code _}, not starting with a digit, at most
   *     {@value Inputs#MAX_SCHEMA_LENGTH} characters
   * @throws NullPointerException for a null data source
   * @throws IllegalArgumentException for a schema name outside that rule
   */
  public static BalancerOperations of(DataSource dataSource, String schema) {
    Objects.requireNonNull(dataSource, "dataSource");
    return new BalancerOperations(
        dataSource, BalancerTables.of(Inputs.schema("schema", schema)), Limits.defaults(), null);
  }

  /** The operator of a group's data source and schema, metering into the group's meters. */
  static BalancerOperations ofGroup(
      DataSource dataSource, BalancerTables tables, Limits limits, BalancerMetrics metrics) {
    return new BalancerOperations(dataSource, tables, limits, metrics);
  }

  /** The data source operated on. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** The schema operated on. */
  public String schema() {
    return tables.schema();
  }

  /**
   * Creates or upgrades the balancer's tables in this schema (created if missing), with the Flyway
   * history table {@value #HISTORY_TABLE} in that schema, so each schema migrates on its own.
   *
   * @return the number of migrations applied
   */
  public int migrate() {
    // The one migration path of every driver: Flyway into the schema with its own history
    // table, serialized across processes by an advisory lock (core's Migrations).
    return Migrations.migrate(
        dataSource, tables.schema(), HISTORY_TABLE, "classpath:db/balancer", Map.of());
  }

  /**
   * The statements that give {@code role} what the balancer needs at run time, and nothing more:
   * USAGE on this schema; SELECT, INSERT, UPDATE and DELETE on its tables; USAGE and SELECT on its
   * {@code rotation} sequence (the messages' identity column needs no grant). Identifiers are
   * quoted. Run them as the schema's owner after {@link #migrate()}; the role then runs producers,
   * pumps and every operation of this module, but cannot change the schema. Nothing is sent.
   *
   * @throws IllegalArgumentException for a role that is empty, holds NUL or is longer than 63 bytes
   */
  public List<String> grantStatements(String role) {
    Inputs.text("role", Inputs.key("role", role), MAX_ROLE_BYTES);
    String schema = tables.schema();
    DSLContext render = DSL.using(SQLDialect.POSTGRES);
    String r = render.render(DSL.name(role));
    List<String> tableNames = new ArrayList<>();
    for (String table : BalancerTables.TABLE_NAMES) {
      tableNames.add(render.render(DSL.name(schema, table)));
    }
    return List.of(
        "GRANT USAGE ON SCHEMA " + render.render(DSL.name(schema)) + " TO " + r,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE "
            + String.join(", ", tableNames)
            + " TO "
            + r,
        "GRANT USAGE, SELECT ON SEQUENCE "
            + render.render(DSL.name(schema, "rotation"))
            + " TO "
            + r);
  }

  /** Figures of every partition group that has keys or messages, sorted by group name. */
  public List<GroupStats> groups() {
    return read("reading group stats", dsl -> StoreQueries.groups(tables, dsl, null));
  }

  /**
   * The groups paused cluster-wide ({@link #pauseGroup}), by group name; {@link Pause#name()} is
   * the group.
   */
  public List<Pause> pausedGroups() {
    return read("listing paused groups", tables.pauses::list);
  }

  /** Keys of {@code group} that have messages or a lease (the whole cluster's view). */
  public long partitionCount(String group) {
    Checks.name("group", group);
    return read("counting partitions", dsl -> StoreQueries.partitionCount(tables, dsl, group));
  }

  /** Messages stored in {@code group}, waiting or in flight. */
  public long messageCount(String group) {
    Checks.name("group", group);
    return read("counting messages", dsl -> StoreQueries.messageCount(tables, dsl, group));
  }

  /** Keys of {@code group} in rotation order: the next to be served first. */
  public List<String> partitionKeys(String group) {
    Checks.name("group", group);
    return read("listing partitions", dsl -> StoreQueries.partitionKeys(tables, dsl, group));
  }

  /** One key's figures, or empty when the key has no messages and no lease. */
  public Optional<PartitionStats> partitionStats(String group, String partitionKey) {
    Checks.name("group", group);
    Checks.name("partitionKey", partitionKey);
    return Optional.ofNullable(
        read(
            "reading partition stats",
            dsl -> StoreQueries.partitionStats(tables, dsl, group, partitionKey)));
  }

  /**
   * The figures of several keys of {@code group} with one statement (a page of keys, as an
   * operator's console shows them): each key's as {@link #partitionStats(String, String)} gives it,
   * in the order of {@code partitionKeys}, a key without messages or a lease left out. Its cost
   * grows with the keys asked and their messages (one range of an index each), not with the group.
   *
   * @throws IllegalArgumentException for more than {@value #MAX_STATS_KEYS} keys or a key the
   *     balancer refuses; nothing is sent
   */
  public List<PartitionStats> partitionStats(String group, Collection<String> partitionKeys) {
    Checks.name("group", group);
    Objects.requireNonNull(partitionKeys, "partitionKeys");
    if (partitionKeys.size() > MAX_STATS_KEYS) {
      throw new IllegalArgumentException(
          "at most " + MAX_STATS_KEYS + " keys at once: " + partitionKeys.size());
    }
    for (String key : partitionKeys) {
      Checks.name("partitionKey", key);
    }
    List<String> keys = List.copyOf(partitionKeys);
    return List.copyOf(
        read(
            "reading partition stats",
            dsl -> StoreQueries.partitionStats(tables, dsl, group, keys)));
  }

  /** The figures of {@code group}: keys, messages, leases, parked keys, oldest message age. */
  public GroupStats stats(String group) {
    Checks.name("group", group);
    List<GroupStats> all =
        read("reading group stats", dsl -> StoreQueries.groups(tables, dsl, group));
    return all.isEmpty() ? new GroupStats(group, 0, 0, 0, 0, Duration.ZERO) : all.get(0);
  }

  /** Parked keys of {@code group} with the reason each was parked, oldest first. */
  public Map<String, String> parkedKeys(String group) {
    Checks.name("group", group);
    return read("listing parked keys", dsl -> StoreQueries.parkedKeys(tables, dsl, group));
  }

  /**
   * A page of the parked keys of {@code group}, oldest parked first (ties by key), with the reason
   * and when each was parked: the keys after {@code after} (the last entry of the previous page),
   * or from the first when it is null. Each page is a range of the index of parked keys, however
   * many keys the group has.
   *
   * @throws IllegalArgumentException for a limit outside 1..{@value #MAX_PARKED_PAGE}; nothing is
   *     sent
   */
  public List<ParkedKey> parkedKeys(String group, ParkedKey after, int limit) {
    Checks.name("group", group);
    if (limit < 1 || limit > MAX_PARKED_PAGE) {
      throw new IllegalArgumentException("limit must be 1.." + MAX_PARKED_PAGE + ": " + limit);
    }
    OffsetDateTime afterAt = after == null ? null : after.parkedAt().atOffset(ZoneOffset.UTC);
    return read(
        "listing parked keys",
        dsl ->
            StoreQueries.parkedKeys(
                    tables, dsl, group, afterAt, after == null ? null : after.partitionKey(), limit)
                .stream()
                .map(r -> new ParkedKey(r.key(), r.reason(), r.parkedAt().toInstant()))
                .toList());
  }

  /**
   * Puts a parked key of {@code group} back into the rotation with no failures; false when it was
   * not parked.
   */
  public boolean unpark(String group, String partitionKey) {
    Checks.name("group", group);
    Checks.name("partitionKey", partitionKey);
    return read("unparking a key", dsl -> StoreQueries.unpark(tables, dsl, group, partitionKey));
  }

  /**
   * Pauses {@code group} cluster-wide: from the next poll on, no pump of any process acquires its
   * messages (deliveries already being handled finish, hand-off leases run on, storing goes on).
   * Returns true when the group was not paused yet (a second pause keeps the first reason).
   *
   * @param reason why, for operators, or null
   * @throws IllegalArgumentException when the reason is over {@link Limits#MAX_REASON_CHARS} UTF-8
   *     bytes or holds NUL; nothing is sent
   */
  public boolean pauseGroup(String group, String reason) {
    tables.pauses.checkName(group);
    Pauses.checkReason(reason);
    return read("pausing a group", dsl -> tables.pauses.pause(dsl, group, reason));
  }

  /** Resumes {@code group} after {@link #pauseGroup}; true when it was paused. */
  public boolean resumeGroup(String group) {
    tables.pauses.checkName(group);
    return read("resuming a group", dsl -> tables.pauses.resume(dsl, group));
  }

  /** True while {@code group} is paused cluster-wide ({@link #pauseGroup}). */
  public boolean isPaused(String group) {
    tables.pauses.checkName(group);
    return read("reading a group's pause", dsl -> tables.pauses.isPaused(dsl, group));
  }

  /**
   * Confirms a handed-off message from any process, whatever its group: removes it and frees its
   * key. A token that no longer holds the lease is rejected ({@link LeaseResult#STALE_TOKEN}) and
   * nothing changes.
   */
  public LeaseResult confirm(long messageId, UUID token) {
    Objects.requireNonNull(token, "token");
    return lease(
        "confirm",
        () ->
            Transactions.inNew(
                dataSource,
                "confirming a message",
                tx -> LeaseQueries.confirm(tx, tables, messageId, token)));
  }

  /** Like {@link #confirm(long, UUID)}, inside the caller's transaction on {@code connection}. */
  public LeaseResult confirm(Connection connection, long messageId, UUID token) {
    Objects.requireNonNull(connection, "connection");
    Objects.requireNonNull(token, "token");
    return lease(
        "confirm",
        () ->
            Transactions.inCaller(
                Tx.of(connection),
                "confirming a message",
                tx -> LeaseQueries.confirm(tx, tables, messageId, token)));
  }

  /**
   * Moves a hand-off lease's expiry to {@code duration} from now by the database clock.
   *
   * @throws IllegalArgumentException for a duration that is not positive or over {@link
   *     Limits#MAX_DELAY}; nothing is sent
   */
  public LeaseResult extendLease(long messageId, UUID token, Duration duration) {
    Objects.requireNonNull(token, "token");
    Checks.positive("duration", duration);
    return lease(
        "extend",
        () ->
            Transactions.inNew(
                dataSource,
                "extending a lease",
                tx -> LeaseQueries.extend(tx, tables, messageId, token, duration)));
  }

  /**
   * Ends a hand-off lease and puts the message back at the front of its key, the key at the back.
   */
  public LeaseResult requeue(long messageId, UUID token) {
    return requeue(messageId, token, null);
  }

  /**
   * Like {@link #requeue(long, UUID)}, replacing the properties with a JSON object unless {@code
   * propertiesJson} is null (checked against {@link Limits#defaults()}, or the group's limits for
   * the operator of {@link MessageBalancer#operations()}).
   */
  public LeaseResult requeue(long messageId, UUID token, String propertiesJson) {
    Objects.requireNonNull(token, "token");
    String props =
        propertiesJson == null ? null : Json.object(propertiesJson, "properties", limits);
    return lease(
        "requeue",
        () ->
            Transactions.inNew(
                dataSource,
                "requeueing a message",
                tx -> LeaseQueries.requeue(tx, tables, messageId, token, props)));
  }

  @Override
  public String toString() {
    return "BalancerOperations[schema=" + tables.schema() + "]";
  }

  /** Runs a lease operation, timed and counted in the group's meters when there are any. */
  private LeaseResult lease(String operation, Supplier<LeaseQueries.Applied> work) {
    if (metrics == null) {
      return work.get().result();
    }
    long start = System.nanoTime();
    LeaseQueries.Applied applied;
    try {
      applied = work.get();
    } finally {
      metrics.storage(operation, System.nanoTime() - start);
    }
    metrics.leaseOperation(operation, applied.result().name());
    if (applied.endToEnd() != null) {
      metrics.removed(applied.endToEnd());
    }
    return applied.result();
  }

  private <T> T read(String doing, Function<DSLContext, T> query) {
    return Transactions.inNew(dataSource, doing, tx -> query.apply(tables.dsl(tx)));
  }
}
