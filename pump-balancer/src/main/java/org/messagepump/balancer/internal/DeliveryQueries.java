package org.messagepump.balancer.internal;

import static org.messagepump.balancer.internal.Schema.clock;
import static org.messagepump.balancer.internal.Schema.clockPlus;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record2;
import org.jooq.ResultQuery;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.balancer.internal.Schema.M;
import org.messagepump.balancer.internal.Schema.P;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Inputs;

/** The SQL of acquisition and of the bookkeeping after a handler ran. */
public final class DeliveryQueries {

  private DeliveryQueries() {}

  /** A rotation that is not one (no key with it, no place drawn). */
  public static final long NONE = Long.MIN_VALUE;

  /** A key acquisition found without a message (to be deleted if it is really empty). */
  public record EmptyKey(String key, long oldRotation) {}

  /**
   * A key's head message, deleted by the acquisition statement (the success bookkeeping done up
   * front, as the command queue does): {@code othersSeen} when the statement saw later messages of
   * the key, {@code age} the message's age by the database clock when it was deleted, {@code place}
   * the rotation drawn to move its key back ({@link #NONE}: none, the key keeps its own).
   */
  public record Claim(AcquiredMessage message, boolean othersSeen, Duration age, long place) {

    /** The claim with the place {@code place}. */
    Claim withPlace(long place) {
      return new Claim(message, othersSeen, age, place);
    }
  }

  /**
   * A locked key whose head the acquisition statement found gone or replaced by a commit its
   * snapshot did not see (the key's previous holder committed between the snapshot and the lock):
   * its head is deleted by {@link #deleteRacedHeads}, with a snapshot of its own.
   */
  public record RacedKey(String key, long rotation, int failures, long place) {}

  /**
   * The result of one acquisition statement: claims (head messages, deleted), empty keys, raced
   * keys, how many keys it returned, the rotation of the last of them in walk order and the range
   * it came from (0 or 1; meaningless when none), whether a key that joined above the first range's
   * upper bound was seen ({@code joinedAbove}), the highest rotation of the group's ready keys
   * ({@code top}, {@link #NONE} when not asked or no row) and the highest place drawn ({@code
   * drawn}, {@link #NONE} when none).
   */
  public record Acquired(
      List<Claim> claims,
      List<EmptyKey> empty,
      List<RacedKey> raced,
      int rows,
      long lastRotation,
      int lastPart,
      boolean joinedAbove,
      long top,
      long drawn) {}

  /** The key-row condition of one key. */
  public static Condition key(String group, String key) {
    return P.GROUP.eq(group).and(P.KEY.eq(key));
  }

  /**
   * The id of a key's head, its first message: {@code ORDER BY id LIMIT 1} over the key's messages
   * (ids grow in the order of storing, and a kept message is written back with its own id). Read
   * from {@code messages} itself when {@code alias} is null (so {@code group} and {@code key} may
   * be columns of an outer query), else from a scan of it under that alias. Not locked: the key
   * row's lock is what a claim holds, and every writer of a key's messages holds it too.
   */
  private static org.jooq.Select<org.jooq.Record1<Long>> headId(
      String alias, Field<String> group, Field<String> key) {
    Table<?> m = alias == null ? M.T : M.T.as(alias);
    Field<Long> id = alias == null ? M.ID : DSL.field(DSL.name(alias, "id"), Long.class);
    Field<String> g =
        alias == null ? M.GROUP : DSL.field(DSL.name(alias, "partition_group"), String.class);
    Field<String> k =
        alias == null ? M.KEY : DSL.field(DSL.name(alias, "partition_key"), String.class);
    return DSL.select(id)
        .from(m)
        .where(g.eq(group))
        .and(k.eq(key))
        .orderBy(id)
        .limit(DSL.inline(1));
  }

  /**
   * Ready keys of a group: the group is not paused ({@link Schema#PAUSED_GROUPS}), and the key has
   * no lease, is not parked, is due, and is not among {@code excluded} (when not null) — the keys
   * this acquisition already holds (SKIP LOCKED does not skip rows the transaction itself locks, so
   * a second round would otherwise return them again). Both are bind values: the excluded keys as
   * one {@code text[]} parameter, whatever their number.
   */
  static Condition ready(Field<String> group, Field<String[]> excluded) {
    Condition ready =
        P.GROUP
            .eq(group)
            .and(P.LEASE_MESSAGE_ID.isNull())
            .and(P.PARKED_AT.isNull())
            .and(P.RESUME_AT.le(clock()));
    if (excluded != null) {
      ready = ready.and(P.KEY.notIn(Schema.keySet(excluded, "x")));
    }
    return ready.and(Schema.PAUSED_GROUPS.notPaused(group));
  }

  /** The excluded keys as a {@code text[]} bind value. */
  private static Field<String[]> excluded(Collection<String> taken) {
    return DSL.val(taken.toArray(new String[0]), TEXT_ARRAY);
  }

  /**
   * The one acquisition statement (with lockPartition): up to {@code max} ready keys of the group,
   * first those whose rotation lies in {@code (a1, a2]}, then — only if these are fewer than {@code
   * max} — those in {@code (b1, b2]}, each range lowest rotation first, locked {@code FOR NO KEY
   * UPDATE SKIP LOCKED}; the first {@code perKey} messages of each (its head, or a run) are deleted
   * and returned, up to {@code max} messages in all. {@code shape} is a walk ({@link
   * AcquireStatement#WALK_OPEN}, {@link AcquireStatement#WALK_AFTER}, {@link
   * AcquireStatement#WALK_LAP}, {@link AcquireStatement#WALK_BOUNDED}), with {@link
   * AcquireStatement#MOVE_BACK} or not. A walk from a cursor passes {@code (cursor, highest of the
   * lap]} and {@code (min, cursor]}: the keys after the cursor, then round from the lowest (the
   * next lap), in one statement; a batch of one gets the first range alone and the next lap from a
   * statement of its own. The key row is not written: its lock is the claim, and the rotation
   * column stays as it is (the caller's cursor moves instead), so a delivery adds no row version
   * and no index entry to {@code partitions} — unless a key joined above the lap's highest
   * rotation: then the statement draws a new place for each key of its first range ({@link
   * Claim#place()}), which the driver writes once the delivery's outcome is known.
   *
   * <p>The claims of one key come in id order, one after the other. A run is all or nothing: when
   * the statement could not delete every message it chose for a key (a raced key, see {@link
   * RacedKey}), the ones it did delete are written back at once, so that a later message is never
   * delivered while an earlier one is still stored, and the key is raced.
   *
   * <p>The delete is the success bookkeeping done up front, in the pump's transaction: it commits
   * with the handler's writes, a rollback (or a dead connection) brings the message back, and every
   * outcome that keeps the message (requeue, hand-off, postponement, parking) writes it back with
   * its id ({@link #restore}), so its place at the head of its key is kept.
   *
   * <p>The statement is rendered once per {@code max}, shape and {@code perKey} with bind markers
   * (see {@link AcquireStatement.Prepared}) and run through JDBC: the group and the bounds are
   * bound. A message whose columns cannot be read and cannot be kept as they are stored (no raw
   * value could be read either: not seen with the PostgreSQL driver, which hands out any column as
   * text) fails the acquisition, which rolls back and deletes nothing.
   */
  public static Acquired acquireLocked(
      Tx tx,
      AcquireStatement.Prepared prepared,
      int max,
      int perKey,
      int shape,
      long a1,
      long a2,
      long b1,
      long b2)
      throws SQLException {
    String group = prepared.group();
    Connection connection = tx.connection();
    List<Claim> claims = new ArrayList<>();
    List<Integer> parts = new ArrayList<>();
    List<EmptyKey> empty = new ArrayList<>();
    List<RacedKey> raced = new ArrayList<>();
    // Keys of a run whose message was chosen but not deleted (raced), and the claims of those keys
    // that were deleted, to be written back.
    java.util.Set<String> racedKeys = new java.util.HashSet<>();
    // The places drawn, per key (the highest of its rows).
    java.util.Map<String, long[]> places = new java.util.LinkedHashMap<>();
    int lastPart = -1;
    long last = Long.MIN_VALUE;
    int rows = 0;
    boolean joinedAbove = false;
    long top = NONE;
    AcquireStatement.Text text = prepared.text(max, shape, perKey);
    try (PreparedStatement ps = connection.prepareStatement(text.sql())) {
      long[] bounds = {0, a1, a2, b1, b2};
      int[] roles = text.roles();
      for (int i = 0; i < roles.length; i++) {
        if (roles[i] == AcquireStatement.Text.GROUP) {
          ps.setString(i + 1, group);
        } else {
          ps.setLong(i + 1, bounds[roles[i]]);
        }
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows++;
          String key = rs.getString(1);
          long rotation = rs.getLong(2);
          int part = rs.getInt(4);
          // The walk's last key: the highest rotation of the last range that gave any.
          if (part > lastPart || (part == lastPart && rotation > last)) {
            lastPart = part;
            last = rotation;
          }
          rs.getLong(14);
          joinedAbove |= !rs.wasNull();
          long t = rs.getLong(15);
          if (!rs.wasNull()) {
            top = Math.max(top, t);
          }
          long place = rs.getLong(16);
          if (!rs.wasNull()) {
            long[] p = places.computeIfAbsent(key, k -> new long[] {part, rotation, NONE});
            p[2] = Math.max(p[2], place);
          }
          rs.getLong(5);
          if (rs.wasNull()) {
            empty.add(new EmptyKey(key, rotation));
            continue;
          }
          long id = rs.getLong(6);
          if (rs.wasNull()) {
            if (racedKeys.add(key)) {
              raced.add(new RacedKey(key, rotation, rs.getInt(3), NONE));
            }
            continue;
          }
          claims.add(claim(rs, group, key, rotation, id, rs.getInt(3), 7, NONE));
          parts.add(part);
        }
      }
    }
    if (!racedKeys.isEmpty() && perKey > 1) {
      // Only a run can have part of its messages deleted: write those back (a rare path).
      for (int k = claims.size() - 1; k >= 0; k--) {
        Claim c = claims.get(k);
        if (racedKeys.contains(c.message().key())) {
          restore(connection, prepared.ctx(), c.message(), null);
          claims.remove(k);
          parts.remove(k);
        }
      }
    }
    long drawn = NONE;
    if (!places.isEmpty()) {
      java.util.Map<String, Long> byKey = inWalkOrder(places);
      for (long p : byKey.values()) {
        drawn = Math.max(drawn, p);
      }
      claims.replaceAll(c -> c.withPlace(byKey.getOrDefault(c.message().key(), NONE)));
      raced.replaceAll(
          r ->
              new RacedKey(r.key(), r.rotation(), r.failures(), byKey.getOrDefault(r.key(), NONE)));
    }
    return new Acquired(
        walkOrder(claims, parts), empty, raced, rows, last, lastPart, joinedAbove, top, drawn);
  }

  /**
   * The places drawn for the keys of one statement, given to the keys in walk order (range, then
   * rotation): the statement draws them row by row in the order its plan produces the rows, and
   * keys served by one statement take their new places in the order they were walked.
   */
  private static java.util.Map<String, Long> inWalkOrder(java.util.Map<String, long[]> places) {
    List<String> keys = new ArrayList<>(places.keySet());
    keys.sort(
        java.util.Comparator.comparingLong((String k) -> places.get(k)[0])
            .thenComparingLong(k -> places.get(k)[1]));
    long[] drawn = places.values().stream().mapToLong(p -> p[2]).sorted().toArray();
    java.util.Map<String, Long> byKey = new java.util.HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      byKey.put(keys.get(i), drawn[i]);
    }
    return byKey;
  }

  /**
   * The claim of a deleted head from the current row of {@code rs}, whose columns from {@code
   * first} on are content, properties, received_at, attempts, received_at and the clock as
   * microseconds, and whether later messages of the key were seen. A message whose columns cannot
   * be read and cannot be kept as they are stored (no raw value could be read either: not seen with
   * the PostgreSQL driver, which hands out any column as text) fails the acquisition, which rolls
   * back and deletes nothing.
   */
  private static Claim claim(
      ResultSet rs,
      String group,
      String key,
      long rotation,
      long id,
      int failures,
      int first,
      long place)
      throws SQLException {
    AcquiredMessage m = Rows.claim(rs, group, key, rotation, id, failures, first, first + 4);
    if (m.problem() != null && m.stored() == null) {
      throw new SQLException(
          "balancer "
              + group
              + ": message "
              + id
              + " cannot be read and could not be kept as stored ("
              + m.problem()
              + "); the acquisition is rolled back");
    }
    return new Claim(m, rs.getBoolean(first + 6), Rows.ageMicros(rs, first + 4, first + 5), place);
  }

  /**
   * Deletes and returns the heads of keys the acquisition statement locked but found raced, in one
   * statement: a new statement has a new snapshot, taken after this transaction locked the keys, so
   * it sees whatever their previous holders committed, and nobody can change their heads any more.
   * Without it a raced key lost its turn for a whole lap: in a batch-10 drain a commit of ten keys
   * just after another worker's snapshot made that worker skip all ten (Jain's index 0.84 over the
   * first 10% of one run). Keys found empty now are left to the next acquisition.
   */
  public static List<Claim> deleteRacedHeads(
      Connection connection, Schema.Ctx ctx, String group, List<RacedKey> raced)
      throws SQLException {
    java.util.Map<String, RacedKey> byKey = new java.util.HashMap<>();
    for (RacedKey r : raced) {
      byKey.put(r.key(), r);
    }
    List<Claim> claims = new ArrayList<>();
    try (PreparedStatement ps = connection.prepareStatement(ctx.racedHeads())) {
      ps.setString(1, group);
      ps.setObject(2, byKey.keySet().toArray(new String[0]));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          RacedKey r = byKey.get(rs.getString(1));
          if (r != null) {
            claims.add(
                claim(rs, group, r.key(), r.rotation(), rs.getLong(2), r.failures(), 3, r.place()));
          }
        }
      }
    }
    claims.sort(java.util.Comparator.comparingLong(c -> c.message().oldRotation()));
    return claims;
  }

  /**
   * The statement of {@link #deleteRacedHeads}, rendered once per schema: the group and the keys (a
   * {@code text[]}, unnested once) are bound.
   */
  static String renderRacedHeads(DSLContext render) {
    Field<String> group = DSL.val("", SQLDataType.CLOB);
    Field<String> k = DSL.field(DSL.name("k", "k"), String.class);
    Field<Long> head = DSL.field(headId("x", group, k));
    List<Field<?>> returning = new ArrayList<>();
    returning.add(M.KEY);
    returning.add(M.ID);
    returning.addAll(deletedColumns(true));
    return render.render(
        render
            .deleteFrom(M.T)
            .where(
                M.ID.in(
                    DSL.select(head)
                        .from(DSL.unnest(DSL.val(new String[0], TEXT_ARRAY)).as("k", "k"))))
            .returningResult(returning));
  }

  /**
   * What a delete of heads returns after the id: content, properties, received_at, attempts,
   * received_at and the clock as microseconds, and, with {@code probe}, whether a later message of
   * the key exists (a probe per deleted message; the acquisition statement reads it from its scan
   * of the key instead).
   */
  static List<Field<?>> deletedColumns(boolean probe) {
    List<Field<?>> columns = new ArrayList<>();
    columns.add(M.CONTENT.as("d_content"));
    columns.add(M.PROPERTIES.as("d_properties"));
    columns.add(M.RECEIVED_AT.as("d_received"));
    columns.add(M.ATTEMPTS.as("d_attempts"));
    columns.add(Rows.micros(M.RECEIVED_AT).as("d_received_us"));
    columns.add(Rows.micros(clock()).as("d_now_us"));
    if (probe) {
      columns.add(laterMessageOfKey(DSL.noCondition()).as("d_others"));
    }
    return columns;
  }

  /**
   * The claims in walk order: range by range ({@code parts}, parallel to {@code claims}), lowest
   * rotation first. The statement has no ORDER BY (a sort node at every execution): its rows come
   * in this order as the plan runs them today, and this keeps it so whatever plan PostgreSQL picks.
   */
  private static List<Claim> walkOrder(List<Claim> claims, List<Integer> parts) {
    if (claims.size() < 2) {
      return claims;
    }
    Integer[] order = new Integer[claims.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    java.util.Arrays.sort(
        order,
        java.util.Comparator.comparingInt((Integer i) -> parts.get(i))
            .thenComparingLong(i -> claims.get(i).message().oldRotation())
            .thenComparingLong(i -> claims.get(i).message().messageId()));
    List<Claim> sorted = new ArrayList<>(order.length);
    for (Integer i : order) {
      sorted.add(claims.get(i));
    }
    return sorted;
  }

  private static final org.jooq.DataType<Long[]> LONG_ARRAY = SQLDataType.BIGINT.array();
  private static final org.jooq.DataType<String[]> TEXT_ARRAY = SQLDataType.CLOB.array();

  /**
   * The deletes of handled messages, rendered once per schema: [0] the bulk delete (ids as one
   * array parameter, twice); [1] the delete of one id (every batch of one): a scalar parameter
   * keeps a cheap cached plan, where the array form was planned again at each bind (0.19 ms per
   * delivery in the server log).
   */
  static String[] renderDeletes(DSLContext render) {
    String many = render.render(deleteQuery(render, DSL.val(new Long[0], LONG_ARRAY)));
    Field<Long> one = DSL.val(0L, SQLDataType.BIGINT);
    String single =
        render.render(
            deleteQuery(render, M.ID.eq(one), DSL.field(DSL.name("o", "id"), Long.class).ne(one)));
    return new String[] {many, single};
  }

  /**
   * Without {@code lockPartition}, step one (on its own short transaction): the {@code max} ready
   * keys with the lowest rotation, moved to the back and committed at once, so other processes see
   * the new order while the messages are handled.
   */
  public static List<Record2<String, Long>> rotateKeys(
      DSLContext dsl, String group, int max, Collection<String> taken) {
    Table<?> c =
        DSL.select(P.GROUP.as("c_group"), P.KEY.as("c_key"), P.ROTATION.as("c_rotation"))
            .from(P.T)
            .where(ready(DSL.val(group), taken.isEmpty() ? null : excluded(taken)))
            .orderBy(P.ROTATION)
            // An integer of the code, written into the text: a bound LIMIT makes PostgreSQL plan
            // again at every execution.
            .limit(DSL.inline(max))
            .forNoKeyUpdate()
            .skipLocked()
            .asTable("c");
    return dsl.update(P.T)
        .set(P.ROTATION, Schema.ROTATION.nextval())
        .set(P.JOINED, false)
        .from(c)
        .where(P.GROUP.eq(AcquireStatement.C_GROUP))
        .and(P.KEY.eq(AcquireStatement.C_KEY))
        .returningResult(AcquireStatement.C_KEY, AcquireStatement.C_ROTATION)
        .fetch();
  }

  /**
   * Without {@code lockPartition}, step two (in the pump's transaction): the first message of a key
   * that no other transaction holds, locked {@code FOR UPDATE SKIP LOCKED}; {@code null} when every
   * message of the key is in flight or the key is empty. A row whose columns cannot be read is a
   * claim with a {@link AcquiredMessage#problem()}.
   */
  public static AcquiredMessage lockFirstFreeMessage(
      DSLContext dsl, String group, String key, long oldRotation) throws SQLException {
    Integer failures = dsl.select(P.FAILURES).from(P.T).where(key(group, key)).fetchOne(P.FAILURES);
    try (ResultSet rs =
        dsl.select(M.ID, M.CONTENT, M.PROPERTIES, M.RECEIVED_AT, M.ATTEMPTS)
            .from(M.T)
            .where(M.GROUP.eq(group))
            .and(M.KEY.eq(key))
            .orderBy(M.ID)
            .limit(DSL.inline(1))
            .forUpdate()
            .skipLocked()
            .fetchResultSet()) {
      if (!rs.next()) {
        return null;
      }
      return Rows.claim(
          rs, group, key, oldRotation, rs.getLong(1), failures == null ? 0 : failures, 2);
    }
  }

  /**
   * After the batch that held {@code claim} was rolled back: locks the key row again ({@code FOR NO
   * KEY UPDATE SKIP LOCKED}, as acquisition does, so a producer storing into the key does not make
   * it skip) and returns the claim with the key's current rotation and failures, or {@code null}
   * when the key is held by another transaction, gone, parked or leased, or the message has moved
   * on: with {@code head} (lockPartition) it is no longer the key's first message; without, it is
   * gone or another transaction holds it (its row is locked {@code FOR UPDATE SKIP LOCKED}).
   */
  public static AcquiredMessage relock(DSLContext dsl, AcquiredMessage claim, boolean head) {
    Record2<Long, Integer> row =
        dsl.select(P.ROTATION, P.FAILURES)
            .from(P.T)
            .where(key(claim.group(), claim.key()))
            .and(P.LEASE_MESSAGE_ID.isNull())
            .and(P.PARKED_AT.isNull())
            .forNoKeyUpdate()
            .skipLocked()
            .fetchOne();
    if (row == null) {
      return null;
    }
    if (head) {
      Long first = dsl.fetchValue(headId(null, DSL.val(claim.group()), DSL.val(claim.key())));
      if (first == null || first != claim.messageId()) {
        return null;
      }
    } else if (dsl.selectOne()
            .from(M.T)
            .where(M.ID.eq(claim.messageId()))
            .forUpdate()
            .skipLocked()
            .fetchOne()
        == null) {
      return null;
    }
    return new AcquiredMessage(
        claim.group(),
        claim.key(),
        row.value1(),
        claim.messageId(),
        claim.content(),
        claim.propertiesJson(),
        claim.receivedAt(),
        claim.attempts(),
        row.value2(),
        claim.token(),
        claim.problem(),
        claim.stored());
  }

  /** True when the key has no message at all (committed or ours). */
  public static boolean isEmpty(DSLContext dsl, String group, String key) {
    return !dsl.fetchExists(DSL.selectOne().from(M.T).where(M.GROUP.eq(group)).and(M.KEY.eq(key)));
  }

  /**
   * Deletes the key row when the key has no message and no lease. It first takes the row {@code FOR
   * UPDATE SKIP LOCKED}, which conflicts with the {@code FOR KEY SHARE} every producer holds while
   * it stores: a producer in progress makes this skip (its message will need the row); a producer
   * arriving later waits for our commit and then creates a new row. The emptiness check is a new
   * statement, so it sees every message committed before the lock. Both statements are rendered
   * once per schema ({@link #renderKeyDelete}) and run through JDBC: every key of a drain empties
   * near its end, and rendering them through jOOQ there, a hundred times at once, was a burst of
   * CPU (and of JIT compilation) inside the timed drain.
   */
  public static boolean deleteIfEmpty(Connection c, Schema.Ctx ctx, String group, String key)
      throws SQLException {
    try (PreparedStatement lock = c.prepareStatement(ctx.keyLock())) {
      lock.setString(1, group);
      lock.setString(2, key);
      try (ResultSet rs = lock.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
      }
    }
    try (PreparedStatement delete = c.prepareStatement(ctx.keyDelete())) {
      delete.setString(1, group);
      delete.setString(2, key);
      delete.setString(3, group);
      delete.setString(4, key);
      return delete.executeUpdate() == 1;
    }
  }

  /**
   * The two statements of {@link #deleteIfEmpty}, rendered with bind markers: [0] the lock of the
   * key row (group, key), [1] the delete (group, key, group, key).
   */
  static String[] renderKeyDelete(DSLContext render) {
    Field<String> group = DSL.val("", SQLDataType.CLOB);
    Field<String> key = DSL.val("", SQLDataType.CLOB);
    String lock =
        render.render(
            DSL.selectOne()
                .from(P.T)
                .where(P.GROUP.eq(group).and(P.KEY.eq(key)))
                .and(P.LEASE_MESSAGE_ID.isNull())
                .forUpdate()
                .skipLocked());
    String delete =
        render.render(
            render
                .deleteFrom(P.T)
                .where(P.GROUP.eq(group).and(P.KEY.eq(key)))
                .and(P.LEASE_MESSAGE_ID.isNull())
                .andNotExists(
                    DSL.selectOne().from(M.T).where(M.GROUP.eq(group)).and(M.KEY.eq(key))));
    return new String[] {lock, delete};
  }

  /** What deleting a handled message learned. */
  public record Removed(Duration endToEnd, boolean othersSeen) {}

  /**
   * Deletes handled messages in one statement; returns, per deleted id, its end-to-end age by the
   * database clock and whether the statement saw other messages of its key (if not, the caller
   * tries {@link #deleteIfEmpty}, which re-checks with a fresh snapshot under the row lock). An id
   * already gone is absent from the answer.
   */
  public static java.util.Map<Long, Removed> deleteMessages(
      Connection connection, Schema.Ctx ctx, long[] ids) throws SQLException {
    java.util.Map<Long, Removed> out = new java.util.HashMap<>();
    boolean one = ids.length == 1;
    try (PreparedStatement ps =
        connection.prepareStatement(one ? ctx.deleteOne() : ctx.deleteMany())) {
      if (one) {
        ps.setLong(1, ids[0]);
        ps.setLong(2, ids[0]);
      } else {
        Long[] boxed = new Long[ids.length];
        for (int i = 0; i < ids.length; i++) {
          boxed[i] = ids[i];
        }
        java.sql.Array array = connection.createArrayOf("bigint", boxed);
        ps.setArray(1, array);
        ps.setArray(2, array);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getLong(1), new Removed(Rows.ageMicros(rs, 2, 3), rs.getBoolean(4)));
        }
      }
    }
    return out;
  }

  /**
   * The bulk delete: {@code ids} twice (the rows to delete, and the ids not counted as "other
   * messages of the key").
   */
  private static ResultQuery<?> deleteQuery(DSLContext dsl, Field<Long[]> ids) {
    return deleteQuery(
        dsl, M.ID.eq(DSL.any(ids)), DSL.field(DSL.name("o", "id"), Long.class).ne(DSL.all(ids)));
  }

  /**
   * The delete of the rows {@code which}; {@code notDeleted} tells an "other" message apart. An
   * "other" is looked for after the deleted one only ({@code o.id > id}): the index range starts
   * there, instead of at the key's first entry and over the entries of every message of the key
   * deleted before (dead until a vacuum), a walk that grew with each delivery of a busy key. A
   * delivered message is its key's head, so whatever is left of the key comes after it; when a
   * message before it is still there (one stored late with a lower id, or another transaction's
   * head without lockPartition) the answer is "none seen", and {@link #deleteIfEmpty} checks again
   * under the key row's lock with a fresh snapshot and keeps the key.
   */
  private static ResultQuery<?> deleteQuery(DSLContext dsl, Condition which, Condition notDeleted) {
    Field<Boolean> others = laterMessageOfKey(notDeleted);
    // The two timestamps as microseconds (Rows.micros): no timestamp parsing per delivery.
    return dsl.deleteFrom(M.T)
        .where(which)
        .returningResult(M.ID, Rows.micros(M.RECEIVED_AT), Rows.micros(clock()), others);
  }

  /**
   * Whether the key of the message being deleted has a message after it ({@code o.id > id}) that
   * also meets {@code extra}: the probe every delete of messages returns, looked for after the
   * deleted one only (see {@link #deleteQuery(DSLContext, Condition, Condition)}).
   */
  private static Field<Boolean> laterMessageOfKey(Condition extra) {
    Field<Long> otherId = DSL.field(DSL.name("o", "id"), Long.class);
    return DSL.field(
        DSL.exists(
            DSL.selectOne()
                .from(M.T.as("o"))
                .where(DSL.field(DSL.name("o", "partition_group")).eq(M.GROUP))
                .and(DSL.field(DSL.name("o", "partition_key")).eq(M.KEY))
                .and(otherId.gt(M.ID))
                .and(extra)));
  }

  /**
   * The statement that writes a message deleted by acquisition back (see {@link #restore}). Written
   * by hand: jOOQ 3.19 renders no {@code OVERRIDING SYSTEM VALUE}, which an identity column {@code
   * GENERATED ALWAYS} needs to take an id given. Only the table is rendered (into the schema);
   * every value is a bind marker.
   */
  static String renderRestore(DSLContext render) {
    return "insert into "
        + render.render(M.T)
        + " (id, partition_group, partition_key, content, properties, received_at, attempts)"
        + " overriding system value values (?, ?, ?, ?, cast(? as jsonb), cast(? as timestamptz), ?)"
        + " on conflict (id) do nothing";
  }

  /**
   * Writes a message that acquisition deleted back, in the pump's transaction, with its id (so it
   * keeps its place at the head of its key), group, key, content, received_at and attempts, and
   * with {@code properties} (its own unless a requeue replaced them). A row that could not be
   * decoded is written back as it was stored. Nothing happens when the message is there already (an
   * earlier write-back of this delivery that was not rolled back). Returns true when it wrote.
   */
  public static boolean restore(
      Connection connection, Schema.Ctx ctx, AcquiredMessage m, String properties)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(ctx.restore())) {
      ps.setLong(1, m.messageId());
      ps.setString(2, m.group());
      ps.setString(3, m.key());
      AcquiredMessage.Stored raw = m.stored();
      if (raw != null) {
        ps.setBytes(4, raw.content());
        ps.setString(5, properties != null ? properties : raw.properties());
        ps.setString(6, raw.receivedAt());
      } else {
        ps.setBytes(4, m.content());
        ps.setString(5, properties != null ? properties : m.propertiesJson());
        ps.setObject(6, m.receivedAt());
      }
      ps.setInt(7, m.attempts());
      return ps.executeUpdate() == 1;
    }
  }

  /** Resets the key's failures after a success. */
  public static void clearFailures(DSLContext dsl, String group, String key) {
    dsl.update(P.T)
        .set(P.FAILURES, 0)
        .set(P.RESUME_AT, clock())
        .where(key(group, key))
        .and(P.FAILURES.ne(0))
        .execute();
  }

  /** Replaces a message's properties. */
  public static void replaceProperties(DSLContext dsl, long id, String propertiesJson) {
    dsl.update(M.T).set(M.PROPERTIES, JSONB.valueOf(propertiesJson)).where(M.ID.eq(id)).execute();
  }

  /** Writes the hand-off lease on the key: it stays blocked until confirm, requeue or expiry. */
  public static void lease(DSLContext dsl, AcquiredMessage claim, String owner, Duration duration) {
    lease(dsl, claim, owner, duration, true);
  }

  /**
   * As {@link #lease(DSLContext, AcquiredMessage, String, Duration)}; the key's failures are reset
   * only when {@code resetFailures} (a hand-off is the handler's success; a lease-mode claim is not
   * an outcome yet).
   */
  public static void lease(
      DSLContext dsl,
      AcquiredMessage claim,
      String owner,
      Duration duration,
      boolean resetFailures) {
    var update =
        dsl.update(P.T)
            .set(P.LEASE_MESSAGE_ID, claim.messageId())
            .set(P.LEASE_TOKEN, claim.token())
            .set(P.LEASE_OWNER, owner)
            .set(P.LEASE_UNTIL, clockPlus(duration));
    if (resetFailures) {
      update = update.set(P.FAILURES, 0);
    }
    update.where(key(claim.group(), claim.key())).execute();
  }

  /**
   * Postpones the key by {@code delay}. With a {@code place} (not {@link #NONE}) the key takes it
   * (the failure was its turn, in a lap where turns move keys back); else its rotation is not
   * touched: with lockPartition the walk has passed it, and without, the key was moved to the back
   * when it was taken.
   */
  public static void postpone(
      DSLContext dsl, AcquiredMessage claim, int failures, Duration delay, long place) {
    var update = dsl.update(P.T).set(P.FAILURES, failures).set(P.RESUME_AT, clockPlus(delay));
    if (place != NONE) {
      update = update.set(P.ROTATION, place).set(P.JOINED, false);
    }
    update.where(key(claim.group(), claim.key())).execute();
  }

  /**
   * Moves keys back to the places their turns drew ({@link Claim#place()}), in one round trip:
   * {@code keys} and {@code places} are parallel. A key deleted since (found empty) is not there to
   * update.
   */
  public static void moveBack(
      Connection connection, Schema.Ctx ctx, String group, List<String> keys, List<Long> places)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(ctx.moveBack())) {
      for (int i = 0; i < keys.size(); i++) {
        ps.setLong(1, places.get(i));
        ps.setString(2, group);
        ps.setString(3, keys.get(i));
        if (keys.size() == 1) {
          ps.executeUpdate();
          return;
        }
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /**
   * Gives a key that joined the rotation again a new place at the back, as a key that joined (a
   * message was stored into it while its last one was being handled: it is not deleted as empty).
   */
  public static void rejoin(Connection connection, Schema.Ctx ctx, String group, String key)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(ctx.rejoin())) {
      ps.setString(1, group);
      ps.setString(2, key);
      ps.executeUpdate();
    }
  }

  /**
   * The statements of {@link #moveBack} (place, group, key) and {@link #rejoin} (group, key),
   * rendered once per schema with bind markers.
   */
  static String[] renderPlaces(DSLContext render) {
    Field<String> group = DSL.val("", SQLDataType.CLOB);
    Field<String> key = DSL.val("", SQLDataType.CLOB);
    String moveBack =
        render.render(
            render
                .update(P.T)
                .set(P.ROTATION, DSL.val(0L, SQLDataType.BIGINT))
                .set(P.JOINED, DSL.inline(false))
                .where(P.GROUP.eq(group).and(P.KEY.eq(key))));
    String rejoin =
        render.render(
            render
                .update(P.T)
                .set(P.ROTATION, Schema.ROTATION.nextval())
                .set(P.JOINED, DSL.inline(true))
                .where(P.GROUP.eq(group).and(P.KEY.eq(key))));
    return new String[] {moveBack, rejoin};
  }

  /**
   * Parks the key: it is not delivered until it is unparked. The reason is made safe to store first
   * ({@link Inputs#reason}: no NUL, bounded length), whoever passed it.
   */
  public static void park(DSLContext dsl, AcquiredMessage claim, int failures, String reason) {
    dsl.update(P.T)
        .set(P.FAILURES, failures)
        .set(P.PARKED_AT, clock())
        .set(P.PARKED_REASON, Inputs.reason(reason))
        .where(key(claim.group(), claim.key()))
        .execute();
  }
}
