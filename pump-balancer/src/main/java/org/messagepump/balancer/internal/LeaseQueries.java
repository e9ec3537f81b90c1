package org.messagepump.balancer.internal;

import static org.messagepump.balancer.internal.BalancerTables.M_ATTEMPTS;
import static org.messagepump.balancer.internal.BalancerTables.M_GROUP;
import static org.messagepump.balancer.internal.BalancerTables.M_ID;
import static org.messagepump.balancer.internal.BalancerTables.M_KEY;
import static org.messagepump.balancer.internal.BalancerTables.P_GROUP;
import static org.messagepump.balancer.internal.BalancerTables.P_JOINED;
import static org.messagepump.balancer.internal.BalancerTables.P_KEY;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_MESSAGE_ID;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_OWNER;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_TOKEN;
import static org.messagepump.balancer.internal.BalancerTables.P_LEASE_UNTIL;
import static org.messagepump.balancer.internal.BalancerTables.P_PARKED_AT;
import static org.messagepump.balancer.internal.BalancerTables.P_PARKED_REASON;
import static org.messagepump.balancer.internal.BalancerTables.P_ROTATION;
import static org.messagepump.balancer.internal.BalancerTables.clock;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Record2;
import org.jooq.Record3;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.StatementCache;

/** The SQL of hand-off leases: confirm, extend, requeue, and the reaper of expired leases. */
public final class LeaseQueries {

  private static final Field<String> C_GROUP = DSL.field(DSL.name("c", "c_group"), String.class);
  private static final Field<String> C_KEY = DSL.field(DSL.name("c", "c_key"), String.class);
  private static final Field<Long> C_MESSAGE = DSL.field(DSL.name("c", "c_message"), Long.class);

  private LeaseQueries() {}

  /**
   * The statements of a lease's end on the path of every delivery in lease mode (the confirm and
   * the requeue), built by jOOQ with named parameters and rendered once per schema by the kit's
   * {@link StatementCache}, every value bound by it: the group and key of a message, the key's
   * lease (read, and locked) and the update that ends it.
   */
  private record Statements(
      StatementCache.Statement keyOf,
      StatementCache.Statement lease,
      StatementCache.Statement lockedLease,
      StatementCache.Statement clearLease,
      StatementCache.Statement extend) {
    static Statements render(BalancerTables tables) {
      return new Statements(
          StatementCache.render(
              dsl ->
                  dsl.select(M_GROUP, M_KEY)
                      .from(tables.messages)
                      .where(M_ID.eq(StatementCache.parameter("id", SQLDataType.BIGINT))),
              "id"),
          StatementCache.render(dsl -> leaseOf(tables, dsl), "group", "key"),
          StatementCache.render(dsl -> leaseOf(tables, dsl).forNoKeyUpdate(), "group", "key"),
          StatementCache.render(
              dsl -> leaseEnded(tables, dsl).where(DeliveryQueries.keyParameters()),
              "group",
              "key"),
          StatementCache.render(
              dsl ->
                  dsl.update(tables.partitions)
                      .set(P_LEASE_UNTIL, DeliveryQueries.clockPlusDelay())
                      .where(DeliveryQueries.keyParameters()),
              "delay",
              "group",
              "key"));
    }
  }

  private static Statements statements(BalancerTables tables) {
    return tables.statements(Statements.class, Statements::render);
  }

  /** The lease of the key of parameters group and key: its message id and token. */
  private static org.jooq.SelectConditionStep<Record2<Long, UUID>> leaseOf(
      BalancerTables tables, DSLContext dsl) {
    return dsl.select(P_LEASE_MESSAGE_ID, P_LEASE_TOKEN)
        .from(tables.partitions)
        .where(DeliveryQueries.keyParameters());
  }

  /** A lease the reaper ended: the key and message, and the message's attempts now. */
  public record Expired(String group, String key, long messageId, int attempts) {}

  /** The outcome of a lease operation plus, for confirm, the message's end-to-end age. */
  public record Applied(LeaseResult result, String group, Duration endToEnd) {}

  /** A locked lease (group and key) or the reason there is none ({@code rejection}). */
  private record Lease(LeaseResult rejection, String group, String key) {
    static Lease rejected(LeaseResult r) {
      return new Lease(r, null, null);
    }
  }

  /**
   * Locks the key row of {@code messageId} if it still holds the lease with {@code token}; returns
   * the group and key, or the rejection.
   *
   * <p>The locking read selects the key row by group and key only and compares the lease in Java: a
   * hand-off whose transaction has not committed yet holds this row ({@code FOR NO KEY UPDATE}, for
   * the whole delivery), so a confirm that arrives before that commit — a downstream fast enough to
   * answer while the handler is still returning — waits for it and then reads the lease it wrote.
   * Filtering on the lease in the locking statement would evaluate the filter against the committed
   * row without the lease, find nothing to lock, and reject the token as stale: the key would stall
   * for the whole lease and the message be handed off a second time.
   */
  private static Lease lockLease(Tx tx, BalancerTables tables, long messageId, UUID token) {
    Statements st = statements(tables);
    Connection connection = tx.connection();
    try {
      String group;
      String key;
      try (PreparedStatement ps = st.keyOf.prepare(connection, messageId);
          ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Lease.rejected(LeaseResult.UNKNOWN_MESSAGE);
        }
        group = rs.getString(1);
        key = rs.getString(2);
      }
      // Cheap rejection without waiting: a committed lease of another message or token can only
      // be replaced by a new hand-off after it ended, and that hand-off's token cannot be ours (a
      // token exists only once its delivery has acquired the key, after the committed lease was
      // cleared).
      try (PreparedStatement ps = st.lease.prepare(connection, group, key);
          ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          rs.getLong(1);
          if (!rs.wasNull() && !holds(rs, messageId, token)) {
            return Lease.rejected(staleOrGone(tables, tables.dsl(tx), messageId));
          }
        }
      }
      // Waits for whoever holds the row (a hand-off not yet committed, the reaper, another
      // confirm), then reads its newest version.
      try (PreparedStatement ps = st.lockedLease.prepare(connection, group, key);
          ResultSet rs = ps.executeQuery()) {
        if (!rs.next() || !holds(rs, messageId, token)) {
          return Lease.rejected(staleOrGone(tables, tables.dsl(tx), messageId));
        }
      }
      return new Lease(null, group, key);
    } catch (SQLException e) {
      throw new DatabaseException("locking a lease", e);
    }
  }

  /** Whether the lease of the current row of {@code rs} (message id, token) is this one. */
  private static boolean holds(ResultSet rs, long messageId, UUID token) throws SQLException {
    long id = rs.getLong(1);
    return !rs.wasNull() && id == messageId && token.equals(rs.getObject(2, UUID.class));
  }

  private static LeaseResult staleOrGone(BalancerTables tables, DSLContext dsl, long messageId) {
    return dsl.fetchExists(DSL.selectOne().from(tables.messages).where(M_ID.eq(messageId)))
        ? LeaseResult.STALE_TOKEN
        : LeaseResult.UNKNOWN_MESSAGE;
  }

  /**
   * Confirms a handed-off message: deletes it, frees its key (deleting the key row if empty; a key
   * with messages left joins the rotation at the back).
   */
  public static Applied confirm(Tx tx, BalancerTables tables, long messageId, UUID token) {
    Lease m = lockLease(tx, tables, messageId, token);
    if (m.rejection() != null) {
      return new Applied(m.rejection(), null, null);
    }
    try {
      DeliveryQueries.Removed removed =
          DeliveryQueries.deleteMessages(tx.connection(), tables, new long[] {messageId})
              .get(messageId);
      statements(tables).clearLease().executeUpdate(tx.connection(), m.group(), m.key());
      DeliveryQueries.deleteIfEmpty(tx.connection(), tables, m.group(), m.key());
      return new Applied(
          LeaseResult.APPLIED, m.group(), removed == null ? null : removed.endToEnd());
    } catch (SQLException e) {
      throw new DatabaseException("confirming a message", e);
    }
  }

  /** Moves a lease's expiry to {@code duration} from now (database clock). */
  public static Applied extend(
      Tx tx, BalancerTables tables, long messageId, UUID token, Duration duration) {
    Lease m = lockLease(tx, tables, messageId, token);
    if (m.rejection() != null) {
      return new Applied(m.rejection(), null, null);
    }
    try {
      statements(tables)
          .extend()
          .executeUpdate(tx.connection(), DeliveryQueries.delay(duration), m.group(), m.key());
    } catch (SQLException e) {
      throw new DatabaseException("extending a lease", e);
    }
    return new Applied(LeaseResult.APPLIED, m.group(), null);
  }

  /**
   * Ends a lease without removing the message: it stays at the front of its key, the key goes to
   * the back of the rotation, and {@code propertiesJson} replaces its properties unless null.
   */
  public static Applied requeue(
      Tx tx, BalancerTables tables, long messageId, UUID token, String propertiesJson) {
    Lease m = lockLease(tx, tables, messageId, token);
    if (m.rejection() != null) {
      return new Applied(m.rejection(), null, null);
    }
    try {
      statements(tables).clearLease().executeUpdate(tx.connection(), m.group(), m.key());
      if (propertiesJson != null) {
        DeliveryQueries.replaceProperties(tx.connection(), tables, messageId, propertiesJson);
      }
    } catch (SQLException e) {
      throw new DatabaseException("requeueing a message", e);
    }
    return new Applied(LeaseResult.APPLIED, m.group(), null);
  }

  /**
   * The update of a key whose lease ends: no lease, and a new place at the back (joined): the key
   * is ready again from now, so it joins the rotation at the back (a new rotation, drawn when the
   * lease ends).
   */
  private static org.jooq.UpdateSetMoreStep<?> leaseEnded(BalancerTables tables, DSLContext dsl) {
    return dsl.update(tables.partitions)
        .set(P_LEASE_MESSAGE_ID, DSL.inline((Long) null, P_LEASE_MESSAGE_ID))
        .set(P_LEASE_TOKEN, DSL.inline((UUID) null, P_LEASE_TOKEN))
        .set(P_LEASE_OWNER, DSL.inline((String) null, P_LEASE_OWNER))
        .set(P_LEASE_UNTIL, DSL.inline((java.time.OffsetDateTime) null, P_LEASE_UNTIL))
        .set(P_ROTATION, tables.rotation.nextval())
        .set(P_JOINED, DSL.inline(true));
  }

  /**
   * The reaper: ends up to {@code limit} expired leases of the group ({@code FOR UPDATE SKIP
   * LOCKED}, so processes never reap the same lease and a confirm holding the row wins), counting
   * an attempt on each message; each key joins the rotation at the back. One indexed statement for
   * the keys, one for the messages.
   */
  public static List<Expired> reap(BalancerTables tables, DSLContext dsl, String group, int limit) {
    Table<?> c =
        DSL.select(P_GROUP.as("c_group"), P_KEY.as("c_key"), P_LEASE_MESSAGE_ID.as("c_message"))
            .from(tables.partitions)
            .where(P_GROUP.eq(group))
            .and(P_LEASE_MESSAGE_ID.isNotNull())
            .and(P_LEASE_UNTIL.lt(clock()))
            .orderBy(P_LEASE_UNTIL)
            .limit(limit)
            .forUpdate()
            .skipLocked()
            .asTable("c");
    var keys =
        leaseEnded(tables, dsl)
            .from(c)
            .where(P_GROUP.eq(C_GROUP))
            .and(P_KEY.eq(C_KEY))
            .returningResult(C_KEY, C_MESSAGE)
            .fetch();
    if (keys.isEmpty()) {
      return List.of();
    }
    List<Long> ids = new ArrayList<>(keys.size());
    for (Record r : keys) {
      ids.add(r.get(C_MESSAGE));
    }
    List<Expired> expired = new ArrayList<>(keys.size());
    for (Record3<Long, String, Integer> r :
        dsl.update(tables.messages)
            .set(M_ATTEMPTS, M_ATTEMPTS.plus(1))
            .where(M_ID.in(ids))
            .returningResult(M_ID, M_KEY, M_ATTEMPTS)
            .fetch()) {
      expired.add(new Expired(group, r.value2(), r.value1(), r.value3()));
    }
    return expired;
  }

  /** Parks a key whose message's lease expired too often. */
  public static void parkExpired(BalancerTables tables, DSLContext dsl, Expired e, String reason) {
    dsl.update(tables.partitions)
        .set(P_PARKED_AT, clock())
        .set(P_PARKED_REASON, org.messagepump.core.spi.Inputs.reason(reason))
        .where(DeliveryQueries.key(e.group(), e.key()))
        .execute();
  }
}
