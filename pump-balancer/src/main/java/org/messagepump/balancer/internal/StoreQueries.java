package org.messagepump.balancer.internal;

import static org.messagepump.balancer.internal.BalancerTables.M_CONTENT;
import static org.messagepump.balancer.internal.BalancerTables.M_GROUP;
import static org.messagepump.balancer.internal.BalancerTables.M_ID;
import static org.messagepump.balancer.internal.BalancerTables.M_KEY;
import static org.messagepump.balancer.internal.BalancerTables.M_PROPERTIES;
import static org.messagepump.balancer.internal.BalancerTables.M_RECEIVED_AT;
import static org.messagepump.balancer.internal.BalancerTables.P_FAILURES;
import static org.messagepump.balancer.internal.BalancerTables.P_GROUP;
import static org.messagepump.balancer.internal.BalancerTables.P_JOINED;
import static org.messagepump.balancer.internal.BalancerTables.P_KEY;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_MESSAGE_ID;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_UNTIL;
import static org.messagepump.balancer.internal.BalancerTables.P_PARKED_AT;
import static org.messagepump.balancer.internal.BalancerTables.P_PARKED_REASON;
import static org.messagepump.balancer.internal.BalancerTables.P_RESUME_AT;
import static org.messagepump.balancer.internal.BalancerTables.P_ROTATION;
import static org.messagepump.balancer.internal.BalancerTables.clock;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.PartitionStats;

/** The SQL of storing messages and of introspection. */
public final class StoreQueries {

  private static final int MAX_KEY_ROW_ATTEMPTS = 100;

  private StoreQueries() {}

  /**
   * Stores one message and returns its id. First a transaction-scoped advisory lock on the key
   * serializes the key's producers (ids commit in key order, so a later id is never visible before
   * an earlier one); then the key row is locked {@code FOR KEY SHARE} (created at the back of the
   * rotation if missing), which keeps a consumer from deleting it as empty but does not wait for a
   * consumer handling the key; then the message is inserted. Every value is bound.
   */
  public static long store(
      BalancerTables tables,
      DSLContext dsl,
      String group,
      String key,
      byte[] content,
      String propertiesJson) {
    dsl.select(
            DSL.function(
                "pg_advisory_xact_lock",
                SQLDataType.OTHER,
                DSL.function(
                    "hashtextextended",
                    SQLDataType.BIGINT,
                    DSL.val(lockText(tables, group, key)),
                    DSL.val(LOCK_SEED))),
            // In the same round trip: wake idle balancer pumps at commit (folded per transaction).
            DSL.function(
                "pg_notify", SQLDataType.OTHER, DSL.val(tables.wakeChannel()), DSL.val("")))
        .fetch();
    for (int attempt = 0; ; attempt++) {
      if (dsl.selectOne()
              .from(tables.partitions)
              .where(DeliveryQueries.key(group, key))
              .forKeyShare()
              .fetchOne()
          != null) {
        break;
      }
      if (attempt >= MAX_KEY_ROW_ATTEMPTS) {
        throw new IllegalStateException(
            "could not create the row of the key after " + MAX_KEY_ROW_ATTEMPTS + " attempts");
      }
      dsl.insertInto(tables.partitions, P_GROUP, P_KEY, P_ROTATION)
          .values(DSL.val(group), DSL.val(key), tables.rotation.nextval())
          .onConflictDoNothing()
          .execute();
    }
    return dsl.insertInto(tables.messages, M_GROUP, M_KEY, M_CONTENT, M_PROPERTIES)
        .values(group, key, content, JSONB.valueOf(propertiesJson))
        .returningResult(M_ID)
        .fetchOne()
        .value1();
  }

  /**
   * Stores many messages of one group in the caller's transaction and returns their ids in input
   * order; {@code keys}, {@code contents} and {@code properties} are parallel lists, already
   * checked. The same locks as {@link #store} in four kinds of statement whatever the number of
   * messages: the advisory locks of every distinct key (taken in one statement, in the order of
   * their lock texts, so two batches over the same keys cannot deadlock), the key rows ({@code FOR
   * KEY SHARE}, the missing ones created at the back of the rotation in order of first appearance),
   * then one multi-row insert per {@value #INSERT_CHUNK} messages. Every value is bound.
   */
  public static long[] storeMany(
      BalancerTables tables,
      DSLContext dsl,
      String group,
      List<String> keys,
      List<byte[]> contents,
      List<String> properties) {
    java.util.LinkedHashSet<String> distinct = new java.util.LinkedHashSet<>(keys);
    String[] lockTexts = new String[distinct.size()];
    int i = 0;
    for (String key : distinct) {
      lockTexts[i++] = lockText(tables, group, key);
    }
    java.util.Arrays.sort(lockTexts);
    var t = DSL.field(DSL.name("u", "t"), String.class);
    dsl.select(
            DSL.function(
                "pg_advisory_xact_lock",
                SQLDataType.OTHER,
                DSL.function("hashtextextended", SQLDataType.BIGINT, t, DSL.val(LOCK_SEED))),
            DSL.function(
                "pg_notify", SQLDataType.OTHER, DSL.val(tables.wakeChannel()), DSL.val("")))
        .from(DSL.unnest(DSL.val(lockTexts, TEXT_ARRAY)).as("u", "t"))
        .fetch();
    lockKeyRows(tables, dsl, group, distinct);
    long[] ids = new long[keys.size()];
    for (int from = 0; from < keys.size(); from += INSERT_CHUNK) {
      int to = Math.min(keys.size(), from + INSERT_CHUNK);
      var insert = dsl.insertInto(tables.messages, M_GROUP, M_KEY, M_CONTENT, M_PROPERTIES);
      var values =
          insert.values(group, keys.get(from), contents.get(from), jsonb(properties, from));
      for (int j = from + 1; j < to; j++) {
        values = values.values(group, keys.get(j), contents.get(j), jsonb(properties, j));
      }
      // Identity values are drawn in VALUES order: the ids sorted ascending are the input order.
      long[] chunk =
          values.returningResult(M_ID).fetch().stream()
              .mapToLong(r -> r.value1())
              .sorted()
              .toArray();
      if (chunk.length != to - from) {
        throw new IllegalStateException(
            "the insert returned " + chunk.length + " ids for " + (to - from) + " messages");
      }
      System.arraycopy(chunk, 0, ids, from, chunk.length);
    }
    return ids;
  }

  /** Messages per multi-row insert: 4 bind values each, far below PostgreSQL's 65,535. */
  static final int INSERT_CHUNK = 1_000;

  private static final long LOCK_SEED = 0x62616c616e636572L;
  private static final org.jooq.DataType<String[]> TEXT_ARRAY = SQLDataType.CLOB.array();

  private static JSONB jsonb(List<String> properties, int i) {
    return JSONB.valueOf(properties.get(i));
  }

  /** The text hashed to the advisory lock id of a key's producers. */
  private static String lockText(BalancerTables tables, String group, String key) {
    return tables.lockPrefix() + group.length() + ":" + group + "/" + key;
  }

  /**
   * Locks the rows of {@code keys} {@code FOR KEY SHARE}, creating the missing ones at the back of
   * the rotation (in the order given) until every row is locked; a row a consumer deletes as empty
   * in between is created again at the next attempt.
   */
  private static void lockKeyRows(
      BalancerTables tables, DSLContext dsl, String group, java.util.Collection<String> keys) {
    java.util.List<String> missing = new ArrayList<>(keys);
    for (int attempt = 0; ; attempt++) {
      java.util.Set<String> locked =
          new java.util.HashSet<>(
              dsl.select(P_KEY)
                  .from(tables.partitions)
                  .where(P_GROUP.eq(group))
                  .and(
                      P_KEY.in(
                          BalancerTables.keySet(
                              DSL.val(missing.toArray(new String[0]), TEXT_ARRAY), "w")))
                  .forKeyShare()
                  .fetch(P_KEY));
      missing.removeIf(locked::contains);
      if (missing.isEmpty()) {
        return;
      }
      if (attempt >= MAX_KEY_ROW_ATTEMPTS) {
        throw new IllegalStateException(
            "could not create the rows of the keys after " + MAX_KEY_ROW_ATTEMPTS + " attempts");
      }
      var t = DSL.field(DSL.name("u", "t"), String.class);
      var o = DSL.field(DSL.name("u", "o"), Long.class);
      // The rotation is drawn in the subquery's order: new keys join in order of appearance.
      var ordered =
          DSL.select(t)
              .from(
                  DSL.unnest(DSL.val(missing.toArray(new String[0]), TEXT_ARRAY))
                      .withOrdinality()
                      .as("u", "t", "o"))
              .orderBy(o)
              .asTable("n", "k");
      dsl.insertInto(tables.partitions, P_GROUP, P_KEY, P_ROTATION)
          .select(
              DSL.select(
                      DSL.val(group),
                      DSL.field(DSL.name("n", "k"), String.class),
                      tables.rotation.nextval())
                  .from(ordered))
          .onConflictDoNothing()
          .execute();
    }
  }

  /** Keys of the group. */
  public static long partitionCount(BalancerTables tables, DSLContext dsl, String group) {
    return dsl.fetchCount(tables.partitions, P_GROUP.eq(group));
  }

  /** Messages of the group. */
  public static long messageCount(BalancerTables tables, DSLContext dsl, String group) {
    return dsl.fetchCount(tables.messages, M_GROUP.eq(group));
  }

  /** Keys of the group in rotation order (the next to be served first). */
  public static List<String> partitionKeys(BalancerTables tables, DSLContext dsl, String group) {
    return dsl.select(P_KEY)
        .from(tables.partitions)
        .where(P_GROUP.eq(group))
        .orderBy(P_ROTATION)
        .fetch(P_KEY);
  }

  /** Parked keys of the group with their reasons. */
  public static Map<String, String> parkedKeys(
      BalancerTables tables, DSLContext dsl, String group) {
    Map<String, String> parked = new LinkedHashMap<>();
    for (Record r :
        dsl.select(P_KEY, P_PARKED_REASON)
            .from(tables.partitions)
            .where(P_GROUP.eq(group))
            .and(P_PARKED_AT.isNotNull())
            .orderBy(P_PARKED_AT)
            .fetch()) {
      parked.put(r.get(P_KEY), r.get(P_PARKED_REASON));
    }
    return parked;
  }

  /** A parked key's row: key, reason, when. */
  public record ParkedRow(String key, String reason, OffsetDateTime parkedAt) {}

  /**
   * Up to {@code limit} parked keys of {@code group}, oldest parked first (ties by key), after
   * {@code (afterAt, afterKey)} when {@code afterKey} is not null: a range of the index of parked
   * keys ({@code partitions_parked}).
   */
  public static List<ParkedRow> parkedKeys(
      BalancerTables tables,
      DSLContext dsl,
      String group,
      OffsetDateTime afterAt,
      String afterKey,
      int limit) {
    return dsl.select(P_KEY, P_PARKED_REASON, P_PARKED_AT)
        .from(tables.partitions)
        .where(P_GROUP.eq(group))
        .and(P_PARKED_AT.isNotNull())
        .and(
            afterKey == null
                ? DSL.noCondition()
                : DSL.row(P_PARKED_AT, P_KEY).gt(DSL.val(afterAt), DSL.val(afterKey)))
        .orderBy(P_PARKED_AT, P_KEY)
        .limit(limit)
        .fetch(r -> new ParkedRow(r.value1(), r.value2(), r.value3()));
  }

  /** Unparks a key: failures reset, due now, joined at the back of the rotation. */
  public static boolean unpark(BalancerTables tables, DSLContext dsl, String group, String key) {
    return dsl.update(tables.partitions)
            .setNull(P_PARKED_AT)
            .setNull(P_PARKED_REASON)
            .set(P_FAILURES, 0)
            .set(P_RESUME_AT, clock())
            .set(P_ROTATION, tables.rotation.nextval())
            .set(P_JOINED, DSL.inline(true))
            .where(DeliveryQueries.key(group, key))
            .and(P_PARKED_AT.isNotNull())
            .execute()
        == 1;
  }

  /**
   * One key's figures; {@code null} when the key has no row. "Locked" probes the row {@code FOR
   * SHARE SKIP LOCKED}: that conflicts with a consumer's lock but not with a producer's.
   */
  public static PartitionStats partitionStats(
      BalancerTables tables, DSLContext dsl, String group, String key) {
    Record p =
        dsl.select(
                P_LEASE_MESSAGE_ID,
                P_LEASE_UNTIL,
                P_FAILURES,
                P_RESUME_AT,
                P_PARKED_REASON,
                clock())
            .from(tables.partitions)
            .where(DeliveryQueries.key(group, key))
            .fetchOne();
    if (p == null) {
      return null;
    }
    boolean free =
        dsl.selectOne()
                .from(tables.partitions)
                .where(DeliveryQueries.key(group, key))
                .forShare()
                .skipLocked()
                .fetchOne()
            != null;
    Record m =
        dsl.select(DSL.count(), oldest())
            .from(tables.messages)
            .where(M_GROUP.eq(group))
            .and(M_KEY.eq(key))
            .fetchOne();
    OffsetDateTime now = p.get(clock());
    OffsetDateTime resumeAt = p.get(P_RESUME_AT);
    OffsetDateTime leaseUntil = p.get(P_LEASE_UNTIL);
    return new PartitionStats(
        key,
        m.get(0, Long.class),
        !free,
        p.get(P_LEASE_MESSAGE_ID),
        leaseUntil == null ? null : leaseUntil.toInstant(),
        p.get(P_FAILURES),
        resumeAt == null || !resumeAt.isAfter(now) ? null : resumeAt.toInstant(),
        p.get(P_PARKED_REASON),
        age(m.get(1, OffsetDateTime.class), now));
  }

  /**
   * The figures of the given keys of {@code group} in one statement: a range of the partitions'
   * primary key for the keys, and per key one range of the index of its messages ({@code
   * messages_key_order}) for its count and oldest message. A key without a row is left out; the
   * keys come back in the order of {@code keys}. Whether a transaction holds a key is read as
   * {@link #partitionStats} reads it, by a {@code FOR SHARE SKIP LOCKED} probe of its row.
   */
  public static List<PartitionStats> partitionStats(
      BalancerTables tables, DSLContext dsl, String group, java.util.Collection<String> keys) {
    if (keys.isEmpty()) {
      return List.of();
    }
    org.jooq.Field<Long> count =
        DSL.field(
            "(SELECT count(*) FROM {0} AS m WHERE m.partition_group = {1}"
                + " AND m.partition_key = {2})",
            SQLDataType.BIGINT, tables.messages, P_GROUP, P_KEY);
    org.jooq.Field<OffsetDateTime> oldest =
        DSL.field(
            "(SELECT min(m.received_at) FILTER (WHERE isfinite(m.received_at)) FROM {0} AS m"
                + " WHERE m.partition_group = {1} AND m.partition_key = {2})",
            SQLDataType.TIMESTAMPWITHTIMEZONE, tables.messages, P_GROUP, P_KEY);
    org.jooq.Field<Boolean> free =
        DSL.field(
            "EXISTS (SELECT 1 FROM {0} AS q WHERE q.partition_group = {1}"
                + " AND q.partition_key = {2} FOR SHARE SKIP LOCKED)",
            SQLDataType.BOOLEAN, tables.partitions, P_GROUP, P_KEY);
    org.jooq.Field<OffsetDateTime> now = clock();
    Map<String, PartitionStats> byKey = new java.util.HashMap<>();
    for (Record p :
        dsl.select(
                P_KEY,
                P_LEASE_MESSAGE_ID,
                P_LEASE_UNTIL,
                P_FAILURES,
                P_RESUME_AT,
                P_PARKED_REASON,
                now,
                count,
                oldest,
                free)
            .from(tables.partitions)
            .where(P_GROUP.eq(group))
            .and(P_KEY.eq(DSL.any(DSL.val(keys.toArray(String[]::new)))))
            .fetch()) {
      OffsetDateTime at = p.get(now);
      OffsetDateTime resumeAt = p.get(P_RESUME_AT);
      OffsetDateTime leaseUntil = p.get(P_LEASE_UNTIL);
      Long n = p.get(count);
      byKey.put(
          p.get(P_KEY),
          new PartitionStats(
              p.get(P_KEY),
              n == null ? 0 : n,
              !Boolean.TRUE.equals(p.get(free)),
              p.get(P_LEASE_MESSAGE_ID),
              leaseUntil == null ? null : leaseUntil.toInstant(),
              p.get(P_FAILURES),
              resumeAt == null || !resumeAt.isAfter(at) ? null : resumeAt.toInstant(),
              p.get(P_PARKED_REASON),
              age(p.get(oldest), at)));
    }
    List<PartitionStats> out = new ArrayList<>();
    for (String k : new java.util.LinkedHashSet<>(keys)) {
      PartitionStats f = byKey.get(k);
      if (f != null) {
        out.add(f);
      }
    }
    return out;
  }

  /** Figures of every group that has keys or messages, by group name. */
  public static List<GroupStats> groups(BalancerTables tables, DSLContext dsl, String onlyGroup) {
    var pq =
        dsl.select(
                P_GROUP,
                DSL.count(),
                DSL.count(P_LEASE_MESSAGE_ID),
                DSL.count(P_PARKED_AT),
                clock())
            .from(tables.partitions);
    var mq = dsl.select(M_GROUP, DSL.count(), oldest()).from(tables.messages);
    var partitions =
        (onlyGroup == null ? pq.groupBy(P_GROUP) : pq.where(P_GROUP.eq(onlyGroup)).groupBy(P_GROUP))
            .fetch();
    var messages =
        (onlyGroup == null ? mq.groupBy(M_GROUP) : mq.where(M_GROUP.eq(onlyGroup)).groupBy(M_GROUP))
            .fetch();
    OffsetDateTime now = dsl.select(clock()).fetchOne().value1();
    Map<String, long[]> counts = new java.util.TreeMap<>();
    Map<String, OffsetDateTime> oldest = new LinkedHashMap<>();
    for (Record r : partitions) {
      long[] c = counts.computeIfAbsent(r.get(P_GROUP), g -> new long[4]);
      c[0] = r.get(1, Long.class);
      c[2] = r.get(2, Long.class);
      c[3] = r.get(3, Long.class);
    }
    for (Record r : messages) {
      long[] c = counts.computeIfAbsent(r.get(M_GROUP), g -> new long[4]);
      c[1] = r.get(1, Long.class);
      oldest.put(r.get(M_GROUP), r.get(2, OffsetDateTime.class));
    }
    List<GroupStats> out = new ArrayList<>(counts.size());
    counts.forEach(
        (g, c) -> out.add(new GroupStats(g, c[0], c[1], c[2], c[3], age(oldest.get(g), now))));
    return out;
  }

  /**
   * The oldest finite received_at: a value written around the API ({@code -infinity}) must not
   * break the figures (it is parked as unreadable by the pump).
   */
  private static org.jooq.Field<OffsetDateTime> oldest() {
    return DSL.min(M_RECEIVED_AT).filterWhere(DSL.condition("isfinite({0})", M_RECEIVED_AT));
  }

  private static Duration age(OffsetDateTime oldest, OffsetDateTime now) {
    if (oldest == null || now == null || oldest.isAfter(now)) {
      return Duration.ZERO;
    }
    return Duration.between(oldest, now);
  }
}
