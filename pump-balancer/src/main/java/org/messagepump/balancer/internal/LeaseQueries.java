package org.messagepump.balancer.internal;

import static org.messagepump.balancer.internal.BalancerTables.M_ATTEMPTS;
import static org.messagepump.balancer.internal.BalancerTables.M_GROUP;
import static org.messagepump.balancer.internal.BalancerTables.M_ID;
import static org.messagepump.balancer.internal.BalancerTables.M_KEY;
import static org.messagepump.balancer.internal.BalancerTables.M_PROPERTIES;
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
import static org.messagepump.balancer.internal.BalancerTables.clockPlus;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.Record2;
import org.jooq.Record3;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.messagepump.balancer.model.LeaseResult;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.Tx;

/** The SQL of hand-off leases: confirm, extend, requeue, and the reaper of expired leases. */
public final class LeaseQueries {

  private static final Field<String> C_GROUP = DSL.field(DSL.name("c", "c_group"), String.class);
  private static final Field<String> C_KEY = DSL.field(DSL.name("c", "c_key"), String.class);
  private static final Field<Long> C_MESSAGE = DSL.field(DSL.name("c", "c_message"), Long.class);

  private LeaseQueries() {}

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
  private static Lease lockLease(
      BalancerTables tables, DSLContext dsl, long messageId, UUID token) {
    Record2<String, String> m =
        dsl.select(M_GROUP, M_KEY).from(tables.messages).where(M_ID.eq(messageId)).fetchOne();
    if (m == null) {
      return Lease.rejected(LeaseResult.UNKNOWN_MESSAGE);
    }
    var row = DeliveryQueries.key(m.value1(), m.value2());
    // Cheap rejection without waiting: a committed lease of another message or token can only be
    // replaced by a new hand-off after it ended, and that hand-off's token cannot be ours (a token
    // exists only once its delivery has acquired the key, after the committed lease was cleared).
    Record2<Long, UUID> committed =
        dsl.select(P_LEASE_MESSAGE_ID, P_LEASE_TOKEN).from(tables.partitions).where(row).fetchOne();
    if (committed != null && committed.value1() != null && !holds(committed, messageId, token)) {
      return Lease.rejected(staleOrGone(tables, dsl, messageId));
    }
    // Waits for whoever holds the row (a hand-off not yet committed, the reaper, another confirm),
    // then reads its newest version.
    Record2<Long, UUID> locked =
        dsl.select(P_LEASE_MESSAGE_ID, P_LEASE_TOKEN)
            .from(tables.partitions)
            .where(row)
            .forNoKeyUpdate()
            .fetchOne();
    if (locked == null || !holds(locked, messageId, token)) {
      return Lease.rejected(staleOrGone(tables, dsl, messageId));
    }
    return new Lease(null, m.value1(), m.value2());
  }

  private static boolean holds(Record2<Long, UUID> lease, long messageId, UUID token) {
    return lease.value1() != null && lease.value1() == messageId && token.equals(lease.value2());
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
    DSLContext dsl = tables.dsl(tx);
    Lease m = lockLease(tables, dsl, messageId, token);
    if (m.rejection() != null) {
      return new Applied(m.rejection(), null, null);
    }
    DeliveryQueries.Removed removed;
    try {
      removed =
          DeliveryQueries.deleteMessages(tx.connection(), tables, new long[] {messageId})
              .get(messageId);
    } catch (SQLException e) {
      throw new DatabaseException("confirming a message", e);
    }
    Duration age = removed == null ? null : removed.endToEnd();
    clearLease(tables, dsl, m.group(), m.key()).execute();
    try {
      DeliveryQueries.deleteIfEmpty(tx.connection(), tables, m.group(), m.key());
    } catch (SQLException e) {
      throw new DatabaseException("confirming a message", e);
    }
    return new Applied(LeaseResult.APPLIED, m.group(), age);
  }

  /** Moves a lease's expiry to {@code duration} from now (database clock). */
  public static Applied extend(
      BalancerTables tables, DSLContext dsl, long messageId, UUID token, Duration duration) {
    Lease m = lockLease(tables, dsl, messageId, token);
    if (m.rejection() != null) {
      return new Applied(m.rejection(), null, null);
    }
    dsl.update(tables.partitions)
        .set(P_LEASE_UNTIL, clockPlus(duration))
        .where(DeliveryQueries.key(m.group(), m.key()))
        .execute();
    return new Applied(LeaseResult.APPLIED, m.group(), null);
  }

  /**
   * Ends a lease without removing the message: it stays at the front of its key, the key goes to
   * the back of the rotation, and {@code propertiesJson} replaces its properties unless null.
   */
  public static Applied requeue(
      BalancerTables tables, DSLContext dsl, long messageId, UUID token, String propertiesJson) {
    Lease m = lockLease(tables, dsl, messageId, token);
    if (m.rejection() != null) {
      return new Applied(m.rejection(), null, null);
    }
    clearLease(tables, dsl, m.group(), m.key()).execute();
    if (propertiesJson != null) {
      dsl.update(tables.messages)
          .set(M_PROPERTIES, JSONB.valueOf(propertiesJson))
          .where(M_ID.eq(messageId))
          .execute();
    }
    return new Applied(LeaseResult.APPLIED, m.group(), null);
  }

  /**
   * Ends the lease of a key: the key is ready again from now, so it joins the rotation at the back
   * (a new rotation, drawn when the lease ends).
   */
  private static org.jooq.UpdateConditionStep<?> clearLease(
      BalancerTables tables, DSLContext dsl, String group, String key) {
    return leaseEnded(tables, dsl).where(DeliveryQueries.key(group, key));
  }

  /** The update of a key whose lease ends: no lease, and a new place at the back (joined). */
  private static org.jooq.UpdateSetMoreStep<?> leaseEnded(BalancerTables tables, DSLContext dsl) {
    return dsl.update(tables.partitions)
        .set(P_LEASE_MESSAGE_ID, (Long) null)
        .set(P_LEASE_TOKEN, (UUID) null)
        .set(P_LEASE_OWNER, (String) null)
        .set(P_LEASE_UNTIL, (java.time.OffsetDateTime) null)
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
