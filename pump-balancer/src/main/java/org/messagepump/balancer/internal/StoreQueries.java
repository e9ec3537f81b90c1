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

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.balancer.model.GroupStats;
import org.messagepump.balancer.model.PartitionStats;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.spi.StatementCache;

/** The SQL of storing messages and of introspection. */
public final class StoreQueries {

  private static final int MAX_KEY_ROW_ATTEMPTS = 100;

  private StoreQueries() {}

  /**
   * The statements of storing, per schema: built by jOOQ with named parameters and rendered once by
   * the kit's {@link StatementCache}, every value bound. Each has one text whatever the number of
   * messages or keys (arrays, not a multi-row {@code VALUES}).
   */
  private record Statements(
      StatementCache.Statement lockKey,
      StatementCache.Statement shareKey,
      StatementCache.Statement createKey,
      StatementCache.Statement insert,
      StatementCache.Statement lockKeys,
      StatementCache.Statement shareKeys,
      StatementCache.Statement createKeys,
      StatementCache.Statement insertMany) {

    static Statements render(BalancerTables tables) {
      Field<String> group = DeliveryQueries.GROUP;
      Field<String[]> keys = StatementCache.parameter("keys", TEXT_ARRAY);
      Field<String> t = DSL.field(DSL.name("u", "t"), String.class);
      Field<String> k = DSL.field(DSL.name("n", "k"), String.class);
      return new Statements(
          StatementCache.render(
              dsl ->
                  dsl.select(
                      advisoryLock(StatementCache.parameter("lock", SQLDataType.CLOB)), wake()),
              "lock",
              "channel"),
          StatementCache.render(
              dsl ->
                  dsl.selectOne()
                      .from(tables.partitions)
                      .where(P_GROUP.eq(group))
                      .and(P_KEY.eq(DeliveryQueries.KEY))
                      .forKeyShare(),
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  dsl.insertInto(tables.partitions, P_GROUP, P_KEY, P_ROTATION)
                      .values(group, DeliveryQueries.KEY, tables.rotation.nextval())
                      .onConflictDoNothing(),
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  dsl.insertInto(tables.messages, M_GROUP, M_KEY, M_CONTENT, M_PROPERTIES)
                      .values(
                          group,
                          DeliveryQueries.KEY,
                          StatementCache.parameter("content", SQLDataType.BLOB),
                          StatementCache.parameter("properties", M_PROPERTIES.getDataType()))
                      .returningResult(M_ID),
              "group",
              "key",
              "content",
              "properties"),
          StatementCache.render(
              dsl ->
                  dsl.select(advisoryLock(t), wake())
                      .from(
                          StatementCache.rows(
                              false,
                              "u",
                              List.of("t"),
                              StatementCache.parameter("locks", TEXT_ARRAY))),
              "locks",
              "channel"),
          StatementCache.render(
              dsl ->
                  dsl.select(P_KEY)
                      .from(tables.partitions)
                      .where(P_GROUP.eq(group))
                      .and(P_KEY.in(BalancerTables.keySet(keys, "w")))
                      .forKeyShare(),
              "group",
              "keys"),
          // The rotation is drawn in the subquery's order: new keys join in order of appearance.
          StatementCache.render(
              dsl ->
                  dsl.insertInto(tables.partitions, P_GROUP, P_KEY, P_ROTATION)
                      .select(
                          DSL.select(group, k, tables.rotation.nextval())
                              .from(
                                  DSL.select(t)
                                      .from(StatementCache.rows(true, "u", List.of("t", "o"), keys))
                                      .orderBy(DSL.field(DSL.name("u", "o")))
                                      .asTable("n", "k")))
                      .onConflictDoNothing(),
              "group",
              "keys"),
          // Identity values are drawn in the order the rows reach the insert, the input's order.
          StatementCache.render(
              dsl ->
                  dsl.insertInto(tables.messages, M_GROUP, M_KEY, M_CONTENT, M_PROPERTIES)
                      .select(
                          DSL.select(
                                  group,
                                  DSL.field(DSL.name("u", "key"), String.class),
                                  DSL.field(DSL.name("u", "content"), byte[].class),
                                  DSL.field(
                                      DSL.name("u", "properties"), M_PROPERTIES.getDataType()))
                              .from(
                                  StatementCache.rows(
                                      true,
                                      "u",
                                      List.of("key", "content", "properties", "n"),
                                      keys,
                                      StatementCache.parameter(
                                          "contents", SQLDataType.BLOB.array()),
                                      StatementCache.parameter("properties", TEXT_ARRAY)
                                          .cast(M_PROPERTIES.getDataType().array())))
                              .orderBy(DSL.field(DSL.name("u", "n"))))
                      .returningResult(M_ID),
              "group",
              "keys",
              "contents",
              "properties"));
    }

    /** {@code pg_advisory_xact_lock(hashtextextended(text, seed))}: a key's producer lock. */
    private static Field<Object> advisoryLock(Field<String> text) {
      return DSL.function(
          "pg_advisory_xact_lock",
          SQLDataType.OTHER,
          DSL.function("hashtextextended", SQLDataType.BIGINT, text, DSL.inline(LOCK_SEED)));
    }

    /**
     * Wakes idle balancer pumps at commit (folded per transaction), in the lock's round trip. The
     * payload is null, which {@code pg_notify} sends as the empty payload.
     */
    private static Field<Object> wake() {
      return DSL.function(
          "pg_notify",
          SQLDataType.OTHER,
          StatementCache.parameter("channel", SQLDataType.CLOB),
          DSL.castNull(SQLDataType.CLOB));
    }
  }

  private static Statements statements(BalancerTables tables) {
    return tables.statements(Statements.class, Statements::render);
  }

  /**
   * Stores one message in the transaction on {@code connection} and returns its id. First a
   * transaction-scoped advisory lock on the key serializes the key's producers (ids commit in key
   * order, so a later id is never visible before an earlier one); then the key row is locked {@code
   * FOR KEY SHARE} (created at the back of the rotation if missing), which keeps a consumer from
   * deleting it as empty but does not wait for a consumer handling the key; then the message is
   * inserted.
   *
   * @throws DatabaseException when a statement fails
   */
  public static long store(
      Connection connection,
      BalancerTables tables,
      String group,
      String key,
      byte[] content,
      String propertiesJson) {
    Statements st = statements(tables);
    try {
      try (PreparedStatement ps =
              st.lockKey().prepare(connection, lockText(tables, group, key), tables.wakeChannel());
          ResultSet rs = ps.executeQuery()) {
        rs.next();
      }
      for (int attempt = 0; ; attempt++) {
        try (PreparedStatement ps = st.shareKey().prepare(connection, group, key);
            ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            break;
          }
        }
        if (attempt >= MAX_KEY_ROW_ATTEMPTS) {
          throw new IllegalStateException(
              "could not create the row of the key after " + MAX_KEY_ROW_ATTEMPTS + " attempts");
        }
        st.createKey().executeUpdate(connection, group, key);
      }
      try (PreparedStatement ps =
              st.insert().prepare(connection, group, key, content, JSONB.valueOf(propertiesJson));
          ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException("the insert of a message returned no id");
        }
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new DatabaseException("storing a message", e);
    }
  }

  /**
   * Stores many messages of one group in the transaction on {@code connection} and returns their
   * ids in input order; {@code keys}, {@code contents} and {@code properties} are parallel lists,
   * already checked. The same locks as {@link #store} in four statements whatever the number of
   * messages: the advisory locks of every distinct key (taken in one statement, in the order of
   * their lock texts, so two batches over the same keys cannot deadlock), the key rows ({@code FOR
   * KEY SHARE}, the missing ones created at the back of the rotation in order of first appearance),
   * then the messages, one insert per chunk ({@link #chunkEnd}).
   *
   * @throws DatabaseException when a statement fails
   */
  public static long[] storeMany(
      Connection connection,
      BalancerTables tables,
      String group,
      List<String> keys,
      List<byte[]> contents,
      List<String> properties) {
    Statements st = statements(tables);
    LinkedHashSet<String> distinct = new LinkedHashSet<>(keys);
    String[] lockTexts = new String[distinct.size()];
    int i = 0;
    for (String key : distinct) {
      lockTexts[i++] = lockText(tables, group, key);
    }
    Arrays.sort(lockTexts);
    try {
      try (PreparedStatement ps =
              st.lockKeys().prepare(connection, lockTexts, tables.wakeChannel());
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          // one row per lock taken
        }
      }
      lockKeyRows(connection, st, group, distinct);
      long[] ids = new long[keys.size()];
      for (int from = 0; from < keys.size(); ) {
        int to = chunkEnd(contents, from);
        long[] chunk = new long[to - from];
        int n = 0;
        try (PreparedStatement ps =
                st.insertMany()
                    .prepare(
                        connection,
                        group,
                        keys.subList(from, to).toArray(new String[0]),
                        contents.subList(from, to).toArray(new byte[0][]),
                        properties.subList(from, to).toArray(new String[0]));
            ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            if (n == chunk.length) {
              throw new IllegalStateException(
                  "the insert returned more ids than its " + chunk.length + " messages");
            }
            chunk[n++] = rs.getLong(1);
          }
        }
        if (n != chunk.length) {
          throw new IllegalStateException(
              "the insert returned " + n + " ids for " + chunk.length + " messages");
        }
        // The ids are drawn in input order: sorted ascending they are the input's.
        Arrays.sort(chunk);
        System.arraycopy(chunk, 0, ids, from, chunk.length);
        from = to;
      }
      return ids;
    } catch (SQLException e) {
      throw new DatabaseException("storing messages", e);
    }
  }

  /** Messages per insert, at most. */
  static final int INSERT_CHUNK = 1_000;

  /**
   * Content bytes per insert, at most (unless one message alone is larger): the contents travel as
   * one {@code bytea[]} value, and PostgreSQL refuses a value of 1 GB or more.
   */
  static final long INSERT_CHUNK_BYTES = 64L << 20;

  /**
   * The end (exclusive) of the insert that starts at {@code from}: at most {@link #INSERT_CHUNK}
   * messages and {@link #INSERT_CHUNK_BYTES} of content, and at least one message.
   */
  static int chunkEnd(List<byte[]> contents, int from) {
    int to = from + 1;
    long bytes = contents.get(from).length;
    while (to < contents.size()
        && to - from < INSERT_CHUNK
        && bytes + contents.get(to).length <= INSERT_CHUNK_BYTES) {
      bytes += contents.get(to).length;
      to++;
    }
    return to;
  }

  private static final long LOCK_SEED = 0x62616c616e636572L;
  private static final org.jooq.DataType<String[]> TEXT_ARRAY = SQLDataType.CLOB.array();

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
      Connection connection, Statements st, String group, Collection<String> keys)
      throws SQLException {
    List<String> missing = new ArrayList<>(keys);
    for (int attempt = 0; ; attempt++) {
      Set<String> locked = new HashSet<>();
      try (PreparedStatement ps =
              st.shareKeys().prepare(connection, group, missing.toArray(new String[0]));
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          locked.add(rs.getString(1));
        }
      }
      missing.removeIf(locked::contains);
      if (missing.isEmpty()) {
        return;
      }
      if (attempt >= MAX_KEY_ROW_ATTEMPTS) {
        throw new IllegalStateException(
            "could not create the rows of the keys after " + MAX_KEY_ROW_ATTEMPTS + " attempts");
      }
      st.createKeys().executeUpdate(connection, group, missing.toArray(new String[0]));
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
