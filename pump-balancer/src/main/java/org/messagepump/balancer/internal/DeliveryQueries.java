package org.messagepump.balancer.internal;

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
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_OWNER;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_TOKEN;
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
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Param;
import org.jooq.Record2;
import org.jooq.ResultQuery;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.StatementCache;

/**
 * The SQL of the bookkeeping after a handler ran (acquisition is {@link Acquisition}): deleting
 * handled messages and empty keys, writing a key's failures, lease, postponement or parking.
 */
public final class DeliveryQueries {

  private DeliveryQueries() {}

  /** The group, a named parameter of the statements rendered once. */
  static final Param<String> GROUP = StatementCache.parameter("group", SQLDataType.CLOB);

  /** The key, a named parameter of the statements rendered once. */
  static final Param<String> KEY = StatementCache.parameter("key", SQLDataType.CLOB);

  /**
   * The statements of one schema on the path of every delivery, built by jOOQ with named parameters
   * and rendered once by the kit's {@link StatementCache}, every value bound by it: the deletes of
   * handled messages ({@link #deleteQuery(BalancerTables, DSLContext, Field)}) and the lock and
   * delete of an empty key ({@link #deleteIfEmpty}).
   */
  private record Statements(
      StatementCache.Statement deleteMany,
      StatementCache.Statement deleteOne,
      StatementCache.Statement keyLock,
      StatementCache.Statement keyDelete,
      StatementCache.Statement clearFailures,
      StatementCache.Statement park,
      StatementCache.Statement replaceProperties,
      StatementCache.Statement postpone,
      StatementCache.Statement postponeTo,
      StatementCache.Statement lease,
      StatementCache.Statement leaseResetting) {
    static Statements render(BalancerTables tables) {
      return new Statements(
          StatementCache.render(
              dsl -> deleteQuery(tables, dsl, StatementCache.parameter("ids", LONG_ARRAY)), "ids"),
          StatementCache.render(
              dsl -> {
                Field<Long> one = StatementCache.parameter("id", SQLDataType.BIGINT);
                return deleteQuery(
                    tables, dsl, M_ID.eq(one), DSL.field(DSL.name("o", "id"), Long.class).ne(one));
              },
              "id"),
          StatementCache.render(
              dsl ->
                  dsl.selectOne()
                      .from(tables.partitions)
                      .where(keyParameters())
                      .and(P_LEASE_MESSAGE_ID.isNull())
                      .forUpdate()
                      .skipLocked(),
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  dsl.deleteFrom(tables.partitions)
                      .where(keyParameters())
                      .and(P_LEASE_MESSAGE_ID.isNull())
                      .andNotExists(
                          DSL.selectOne()
                              .from(tables.messages)
                              .where(M_GROUP.eq(GROUP))
                              .and(M_KEY.eq(KEY))),
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  dsl.update(tables.partitions)
                      .set(P_FAILURES, DSL.inline(0))
                      .set(P_RESUME_AT, clock())
                      .where(keyParameters())
                      .and(P_FAILURES.ne(DSL.inline(0))),
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  dsl.update(tables.partitions)
                      .set(P_FAILURES, StatementCache.parameter("failures", SQLDataType.INTEGER))
                      .set(P_PARKED_AT, clock())
                      .set(P_PARKED_REASON, StatementCache.parameter("reason", SQLDataType.CLOB))
                      .where(keyParameters()),
              "failures",
              "reason",
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  dsl.update(tables.messages)
                      .set(
                          M_PROPERTIES,
                          StatementCache.parameter("properties", M_PROPERTIES.getDataType()))
                      .where(M_ID.eq(StatementCache.parameter("id", SQLDataType.BIGINT))),
              "properties",
              "id"),
          StatementCache.render(
              dsl -> postponeQuery(tables, dsl).where(keyParameters()),
              "failures",
              "delay",
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  postponeQuery(tables, dsl)
                      .set(P_ROTATION, StatementCache.parameter("place", SQLDataType.BIGINT))
                      .set(P_JOINED, DSL.inline(false))
                      .where(keyParameters()),
              "failures",
              "delay",
              "place",
              "group",
              "key"),
          StatementCache.render(
              dsl -> leaseQuery(tables, dsl).where(keyParameters()),
              "message",
              "token",
              "owner",
              "delay",
              "group",
              "key"),
          StatementCache.render(
              dsl -> leaseQuery(tables, dsl).set(P_FAILURES, DSL.inline(0)).where(keyParameters()),
              "message",
              "token",
              "owner",
              "delay",
              "group",
              "key"));
    }
  }

  private static Statements statements(BalancerTables tables) {
    return tables.statements(Statements.class, Statements::render);
  }

  /** The key-row condition of one key. */
  public static Condition key(String group, String key) {
    return P_GROUP.eq(group).and(P_KEY.eq(key));
  }

  /**
   * {@code clock_timestamp() + delay}, the delay a named parameter bound with {@link #delay}: the
   * text jOOQ renders for {@link org.messagepump.core.spi.DatabaseClock#afterOffset}, whose
   * interval bind value the cache cannot bind (the PostgreSQL driver has no type for jOOQ's {@code
   * DayToSecond}). The cast is a plain-SQL template over the parameter; the value is bound as the
   * text jOOQ sends for it.
   */
  static Field<java.time.OffsetDateTime> clockPlusDelay() {
    return clock()
        .plus(
            DSL.field(
                "cast({0} as interval day to second)",
                SQLDataType.INTERVALDAYTOSECOND,
                StatementCache.parameter("delay", SQLDataType.CLOB)));
  }

  /**
   * The value of {@link #clockPlusDelay}'s parameter: {@code delay} (checked by {@link
   * Inputs#delay}, as {@link org.messagepump.core.spi.DatabaseClock#afterOffset} does) as jOOQ
   * binds an interval for PostgreSQL.
   */
  static String delay(Duration delay) {
    java.util.Objects.requireNonNull(delay, "delay");
    return org.jooq.util.postgres.PostgresUtils.toPGInterval(
            org.jooq.types.DayToSecond.valueOf(Inputs.delay("delay", delay)))
        .toString();
  }

  /** The key-row condition of the key of parameters {@link #GROUP} and {@link #KEY}. */
  static Condition keyParameters() {
    return P_GROUP.eq(GROUP).and(P_KEY.eq(KEY));
  }

  private static final org.jooq.DataType<Long[]> LONG_ARRAY = SQLDataType.BIGINT.array();

  /**
   * After the batch that held {@code claim} was rolled back: locks the key row again ({@code FOR NO
   * KEY UPDATE SKIP LOCKED}, as acquisition does, so a producer storing into the key does not make
   * it skip) and returns the claim with the key's current rotation and failures, or {@code null}
   * when the key is held by another transaction, gone, parked or leased, or the message has moved
   * on: with {@code head} (lockPartition) it is no longer the key's first message; without, it is
   * gone or another transaction holds it (its row is locked {@code FOR UPDATE SKIP LOCKED}).
   */
  public static AcquiredMessage relock(
      BalancerTables tables, DSLContext dsl, AcquiredMessage claim, boolean head) {
    Record2<Long, Integer> row =
        dsl.select(P_ROTATION, P_FAILURES)
            .from(tables.partitions)
            .where(key(claim.group(), claim.key()))
            .and(P_LEASE_MESSAGE_ID.isNull())
            .and(P_PARKED_AT.isNull())
            .forNoKeyUpdate()
            .skipLocked()
            .fetchOne();
    if (row == null) {
      return null;
    }
    if (head) {
      Long first =
          dsl.fetchValue(
              Acquisition.headId(tables, null, DSL.val(claim.group()), DSL.val(claim.key())));
      if (first == null || first != claim.messageId()) {
        return null;
      }
    } else if (dsl.selectOne()
            .from(tables.messages)
            .where(M_ID.eq(claim.messageId()))
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

  /**
   * Deletes the key row when the key has no message and no lease. It first takes the row {@code FOR
   * UPDATE SKIP LOCKED}, which conflicts with the {@code FOR KEY SHARE} every producer holds while
   * it stores: a producer in progress makes this skip (its message will need the row); a producer
   * arriving later waits for our commit and then creates a new row. The emptiness check is a new
   * statement, so it sees every message committed before the lock. Both statements are rendered
   * once per schema ({@link Statements}) and run through JDBC: every key of a drain empties near
   * its end, and rendering them through jOOQ there, a hundred times at once, was a burst of CPU
   * (and of JIT compilation) inside the timed drain.
   */
  public static boolean deleteIfEmpty(Connection c, BalancerTables tables, String group, String key)
      throws SQLException {
    Statements st = statements(tables);
    try (PreparedStatement lock = st.keyLock().prepare(c, group, key);
        ResultSet rs = lock.executeQuery()) {
      if (!rs.next()) {
        return false;
      }
    }
    return st.keyDelete().executeUpdate(c, group, key) == 1;
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
      Connection connection, BalancerTables tables, long[] ids) throws SQLException {
    java.util.Map<Long, Removed> out = new java.util.HashMap<>();
    boolean one = ids.length == 1;
    Statements st = statements(tables);
    Object value;
    if (one) {
      value = ids[0];
    } else {
      Long[] boxed = new Long[ids.length];
      for (int i = 0; i < ids.length; i++) {
        boxed[i] = ids[i];
      }
      value = boxed;
    }
    try (PreparedStatement ps =
        (one ? st.deleteOne() : st.deleteMany()).prepare(connection, value)) {
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
   * messages of the key"). The delete of one id (every batch of one) has a scalar parameter
   * instead, which keeps a cheap cached plan, where the array form was planned again at each bind
   * (0.19 ms per delivery in the server log).
   */
  private static ResultQuery<?> deleteQuery(
      BalancerTables tables, DSLContext dsl, Field<Long[]> ids) {
    return deleteQuery(
        tables,
        dsl,
        M_ID.eq(DSL.any(ids)),
        DSL.field(DSL.name("o", "id"), Long.class).ne(DSL.all(ids)));
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
  private static ResultQuery<?> deleteQuery(
      BalancerTables tables, DSLContext dsl, Condition which, Condition notDeleted) {
    Field<Boolean> others = laterMessageOfKey(tables, notDeleted);
    // The two timestamps as microseconds (Rows.micros): no timestamp parsing per delivery.
    return dsl.deleteFrom(tables.messages)
        .where(which)
        .returningResult(M_ID, Rows.micros(M_RECEIVED_AT), Rows.clockMicros(), others);
  }

  /**
   * Whether the key of the message being deleted has a message after it ({@code o.id > id}) that
   * also meets {@code extra}: the probe every delete of messages returns, looked for after the
   * deleted one only (see {@link #deleteQuery(DSLContext, Condition, Condition)}).
   */
  static Field<Boolean> laterMessageOfKey(BalancerTables tables, Condition extra) {
    Field<Long> otherId = DSL.field(DSL.name("o", "id"), Long.class);
    return DSL.field(
        DSL.exists(
            DSL.selectOne()
                .from(tables.messages.as("o"))
                .where(DSL.field(DSL.name("o", "partition_group")).eq(M_GROUP))
                .and(DSL.field(DSL.name("o", "partition_key")).eq(M_KEY))
                .and(otherId.gt(M_ID))
                .and(extra)));
  }

  /** Resets the key's failures after a success. */
  public static void clearFailures(
      Connection connection, BalancerTables tables, String group, String key) throws SQLException {
    statements(tables).clearFailures().executeUpdate(connection, group, key);
  }

  /** Replaces a message's properties. */
  public static void replaceProperties(
      Connection connection, BalancerTables tables, long id, String propertiesJson)
      throws SQLException {
    statements(tables)
        .replaceProperties()
        .executeUpdate(connection, JSONB.valueOf(propertiesJson), id);
  }

  /** Writes the hand-off lease on the key: it stays blocked until confirm, requeue or expiry. */
  public static void lease(
      Connection connection,
      BalancerTables tables,
      AcquiredMessage claim,
      String owner,
      Duration duration)
      throws SQLException {
    lease(connection, tables, claim, owner, duration, true);
  }

  /**
   * As {@link #lease(Connection, BalancerTables, AcquiredMessage, String, Duration)}; the key's
   * failures are reset only when {@code resetFailures} (a hand-off is the handler's success; a
   * lease-mode claim is not an outcome yet).
   */
  public static void lease(
      Connection connection,
      BalancerTables tables,
      AcquiredMessage claim,
      String owner,
      Duration duration,
      boolean resetFailures)
      throws SQLException {
    Statements st = statements(tables);
    (resetFailures ? st.leaseResetting() : st.lease())
        .executeUpdate(
            connection,
            claim.messageId(),
            claim.token(),
            owner,
            delay(duration),
            claim.group(),
            claim.key());
  }

  /** The update of a key's lease: message, token, owner and expiry (parameters). */
  private static org.jooq.UpdateSetMoreStep<?> leaseQuery(BalancerTables tables, DSLContext dsl) {
    return dsl.update(tables.partitions)
        .set(P_LEASE_MESSAGE_ID, StatementCache.parameter("message", SQLDataType.BIGINT))
        .set(P_LEASE_TOKEN, StatementCache.parameter("token", SQLDataType.UUID))
        .set(P_LEASE_OWNER, StatementCache.parameter("owner", SQLDataType.CLOB))
        .set(P_LEASE_UNTIL, clockPlusDelay());
  }

  /**
   * Postpones the key by {@code delay}. With a {@code place} (not {@link Acquisition#NONE}) the key
   * takes it (the failure was its turn, in a lap where turns move keys back); else its rotation is
   * not touched: with lockPartition the walk has passed it, and without, the key was moved to the
   * back when it was taken.
   */
  public static void postpone(
      Connection connection,
      BalancerTables tables,
      AcquiredMessage claim,
      int failures,
      Duration delay,
      long place)
      throws SQLException {
    Statements st = statements(tables);
    if (place == Acquisition.NONE) {
      st.postpone().executeUpdate(connection, failures, delay(delay), claim.group(), claim.key());
    } else {
      st.postponeTo()
          .executeUpdate(connection, failures, delay(delay), place, claim.group(), claim.key());
    }
  }

  /** The update of a postponed key: its failures and when it is due (parameters). */
  private static org.jooq.UpdateSetMoreStep<?> postponeQuery(
      BalancerTables tables, DSLContext dsl) {
    return dsl.update(tables.partitions)
        .set(P_FAILURES, StatementCache.parameter("failures", SQLDataType.INTEGER))
        .set(P_RESUME_AT, clockPlusDelay());
  }

  /**
   * Parks the key: it is not delivered until it is unparked. The reason is made safe to store first
   * ({@link Inputs#reason}: no NUL, bounded length), whoever passed it.
   */
  public static void park(
      Connection connection,
      BalancerTables tables,
      AcquiredMessage claim,
      int failures,
      String reason)
      throws SQLException {
    statements(tables)
        .park()
        .executeUpdate(connection, failures, Inputs.reason(reason), claim.group(), claim.key());
  }
}
