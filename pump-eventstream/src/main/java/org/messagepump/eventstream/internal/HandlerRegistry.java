package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.any;
import static org.jooq.impl.DSL.function;
import static org.jooq.impl.DSL.inline;
import static org.jooq.impl.DSL.select;
import static org.jooq.impl.DSL.val;
import static org.messagepump.eventstream.internal.EventTables.CHECKPOINT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.DEFERRED;
import static org.messagepump.eventstream.internal.EventTables.HANDLER_KEY;
import static org.messagepump.eventstream.internal.EventTables.HORIZON;
import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.NEXT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.START_POSITION;
import static org.messagepump.eventstream.internal.EventTables.STREAM_END;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Tx;

/**
 * A handler's row in {@code handlers} and the work that holds its lock: registering the handler
 * (creating a checkpoint row for every existing stream at its start position), and refreshing its
 * checkpoint rows' view of the streams' ends from the streams changed since its horizon.
 *
 * <p>Every statement that creates a checkpoint row of a handler runs while the transaction holds
 * the handler row's lock ({@code FOR UPDATE}). Pollers take it {@code SKIP LOCKED} (one refresh at
 * a time; the others go on with the rows they know of); operations ({@code reset}, {@code
 * setCheckpoint}, {@code resume}) take it waiting, so they see every row a delivery was creating.
 *
 * <p>Why the horizon misses nothing: a refresh reads {@code xmin} of the snapshot its scan uses
 * (one statement takes the lock, reads the xmin and scans), and stores it as the next horizon. A
 * transaction whose append the scan did not see was running (or not begun) at that snapshot, so its
 * id is at or above that {@code xmin}, and the next scan ({@code changed_xid >= horizon}) finds the
 * stream. Rows held by a delivery during a refresh cannot be updated without waiting; their streams
 * are kept in {@code deferred} and looked at again by the next refresh.
 */
public final class HandlerRegistry {

  private final String handlerKey;
  private final long registrationLock;
  private final Table<Record> h;
  private final Table<Record> cp;
  private final Table<Record> streams;
  private final String endsOfCaughtUp;
  private final String endsOfPending;
  private final String insertRows;
  private final String refreshSql;

  /** The registry of one handler in the store of {@code tables}. */
  public HandlerRegistry(EventTables tables, String handlerKey) {
    this.handlerKey = handlerKey;
    this.registrationLock = CheckpointQueries.registrationLockKey(tables.schema(), handlerKey);
    this.h = tables.handlers;
    this.cp = tables.checkpoints;
    this.streams = tables.streams;
    String cpTable = tables.quoted("handler_checkpoints");
    // Plain SQL: jOOQ's DSL has no UPDATE ... FROM unnest(a, b); the names are quoted identifiers
    // of a validated schema, every value is bound. Covered by EventScaleIT and EventDriverIT.
    String from =
        " FROM unnest(?::bigint[], ?::bigint[]) AS v(stream_id, stream_end)"
            + " WHERE c.handler_key = ? AND c.stream_id = v.stream_id"
            + " AND v.stream_end > c.stream_end";
    // A row that becomes pending takes a new turn (the back of the queue); a pending one keeps it.
    this.endsOfCaughtUp =
        "UPDATE "
            + cpTable
            + " AS c SET turn = DEFAULT, stream_end = v.stream_end"
            + from
            + " AND c.checkpoint_offset >= c.stream_end";
    this.endsOfPending = "UPDATE " + cpTable + " AS c SET stream_end = v.stream_end" + from;
    this.insertRows =
        "INSERT INTO "
            + cpTable
            + " (handler_key, stream_id, checkpoint_offset, stream_end)"
            + " SELECT ?, v.stream_id, 0, v.stream_end"
            + " FROM unnest(?::bigint[], ?::bigint[]) AS v(stream_id, stream_end)"
            + " ON CONFLICT (handler_key, stream_id) DO NOTHING";
    // One statement, one snapshot: the handler row, locked SKIP LOCKED, with the snapshot's xmin
    // (the next horizon) and, when the row was not had, whether it exists at all (held by another
    // transaction) or must be registered; then, when the lock was had, the streams changed since
    // its horizon or deferred by the last refresh. The first branch always gives exactly one row
    // (its changed-stream columns null), the second one row per changed stream. The scan's
    // snapshot is the one the xmin comes from, so the horizon argument below holds as for two
    // statements; one round trip instead of two at every refresh of a catch-up.
    String handlersTable = tables.quoted("handlers");
    this.refreshSql =
        "WITH l AS (SELECT horizon, deferred FROM "
            + handlersTable
            + " WHERE handler_key = ? FOR UPDATE SKIP LOCKED)"
            + " SELECT l.horizon, l.deferred, pg_snapshot_xmin(pg_current_snapshot())::text::bigint,"
            + " CASE WHEN l.horizon IS NULL THEN EXISTS (SELECT 1 FROM "
            + handlersTable
            + " WHERE handler_key = ?) ELSE true END, NULL::bigint, NULL::bigint"
            + " FROM (SELECT 1) AS one LEFT JOIN l ON true"
            + " UNION ALL SELECT NULL, NULL, NULL, NULL, s.id, s.next_offset FROM "
            + tables.quoted("streams")
            + " AS s, l WHERE s.changed_xid >= l.horizon OR s.id = ANY (l.deferred)";
  }

  /** What a {@link #refresh} did. */
  public enum Refresh {
    /** Another transaction holds the handler row (refreshing or registering): nothing done. */
    SKIPPED,
    /** Refreshed; no stream had changed since the horizon, so no row changed. */
    UNCHANGED,
    /** Registered the handler, or refreshed rows of changed streams. */
    CHANGED
  }

  /**
   * Refreshes the handler's rows when no other transaction is doing it, registering the handler (at
   * {@code start}) when it has no row yet.
   *
   * <p>The lock and the changed-streams scan are one statement run through plain JDBC with a fixed
   * text (like {@link PendingClaim}): at batch size 1 a refresh comes every {@code REFRESH_EVERY}
   * acquisitions, and rendering jOOQ queries cost more client CPU than the statements cost the
   * server, and a second round trip more than both (docs/performance-notes.md). Every value is
   * bound.
   */
  public Refresh refresh(Tx tx, String start) throws SQLException {
    Connection c = tx.connection();
    Long horizon = null;
    Long[] deferred = null;
    long xmin = 0;
    boolean exists = false;
    List<long[]> changed = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(refreshSql)) {
      ps.setString(1, handlerKey);
      ps.setString(2, handlerKey);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long id = rs.getLong(5);
          if (!rs.wasNull()) {
            changed.add(new long[] {id, rs.getLong(6)});
            continue;
          }
          // The lock row: the xmin of the statement's snapshot, which the scan shares.
          xmin = rs.getLong(3);
          exists = rs.getBoolean(4);
          long h = rs.getLong(1);
          if (!rs.wasNull()) {
            horizon = h;
            deferred = (Long[]) rs.getArray(2).getArray();
          }
        }
      }
    }
    if (horizon == null) {
      // Held by another transaction (refreshing, registering, an operation), or no row yet.
      return exists ? Refresh.SKIPPED : register(tx.dsl(), start);
    }
    if (changed.isEmpty() && deferred.length == 0) {
      // Nothing changed since the horizon (as of this snapshot): keeping the old horizon is still
      // correct (a later scan from it finds a superset), and an unchanged handler writes nothing:
      // no row update per refresh while a catch-up (or any transaction elsewhere) runs.
      return Refresh.UNCHANGED;
    }
    DSLContext dsl = tx.dsl();
    List<Long> stillHeld = changed.isEmpty() ? List.of() : apply(dsl, changed);
    dsl.update(h)
        .set(HORIZON, xmin)
        .set(DEFERRED, stillHeld.toArray(new Long[0]))
        .where(HANDLER_KEY.eq(handlerKey))
        .execute();
    return changed.isEmpty() ? Refresh.UNCHANGED : Refresh.CHANGED;
  }

  /**
   * Registers the handler unless its row exists (then another transaction holds it: false). A
   * concurrent registration makes this wait for it, once per handler key.
   */
  private Refresh register(DSLContext dsl, String start) {
    // Another transaction registering the handler holds this lock: do not wait for it (its
    // delivery may take long); this poll goes on without a refresh.
    Boolean mine =
        dsl.select(
                function("pg_try_advisory_xact_lock", SQLDataType.BOOLEAN, val(registrationLock)))
            .fetchOne()
            .value1();
    if (!Boolean.TRUE.equals(mine)) {
      return Refresh.SKIPPED;
    }
    Long horizon =
        dsl.insertInto(h, HANDLER_KEY, HORIZON, START_POSITION)
            .select(select(val(handlerKey), EventTables.snapshotXmin(), val(start)))
            .onConflictDoNothing()
            .returningResult(HORIZON)
            .fetchOne(HORIZON);
    if (horizon == null) {
      return Refresh.SKIPPED;
    }
    // Every existing stream with events gets its row now, in one statement: from 0, or from its
    // end. Streams this statement does not see were changed at or above the horizon: the next
    // refresh finds them. It also finds an empty stream once its first events are appended, and
    // creates its row from 0 (its end at registration): a row for an empty stream would only cost
    // registration time (200,000 streams, most of them empty, took seconds).
    Field<Long> offset = "END".equals(start) ? NEXT_OFFSET : inline(0L);
    dsl.insertInto(cp, HANDLER_KEY, STREAM_ID, CHECKPOINT_OFFSET, STREAM_END)
        .select(
            select(val(handlerKey), ID, offset, NEXT_OFFSET)
                .from(streams)
                .where(NEXT_OFFSET.gt(0L))
                .orderBy(ID))
        .onConflictDoNothing()
        .execute();
    return Refresh.CHANGED;
  }

  /** Updates the ends of the lockable rows, creates missing rows; returns the held streams. */
  private List<Long> apply(DSLContext dsl, List<long[]> changed) {
    Long[] ids = new Long[changed.size()];
    Long[] ends = new Long[changed.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = changed.get(i)[0];
      ends[i] = changed.get(i)[1];
    }
    Set<Long> existing =
        new HashSet<>(
            dsl.select(STREAM_ID)
                .from(cp)
                .where(HANDLER_KEY.eq(handlerKey))
                .and(STREAM_ID.eq(any(val(ids))))
                .fetch(STREAM_ID));
    Set<Long> lockable =
        new HashSet<>(
            dsl.select(STREAM_ID)
                .from(cp)
                .where(HANDLER_KEY.eq(handlerKey))
                .and(STREAM_ID.eq(any(val(ids))))
                .forUpdate()
                .skipLocked()
                .fetch(STREAM_ID));
    List<Long> lockIds = new ArrayList<>();
    List<Long> lockEnds = new ArrayList<>();
    List<Long> newIds = new ArrayList<>();
    List<Long> newEnds = new ArrayList<>();
    List<Long> held = new ArrayList<>();
    for (int i = 0; i < ids.length; i++) {
      if (lockable.contains(ids[i])) {
        lockIds.add(ids[i]);
        lockEnds.add(ends[i]);
      } else if (existing.contains(ids[i])) {
        held.add(ids[i]);
      } else {
        newIds.add(ids[i]);
        newEnds.add(ends[i]);
      }
    }
    if (!lockIds.isEmpty()) {
      Long[] lockedIds = lockIds.toArray(new Long[0]);
      Long[] lockedEnds = lockEnds.toArray(new Long[0]);
      dsl.execute(endsOfCaughtUp, lockedIds, lockedEnds, handlerKey);
      dsl.execute(endsOfPending, lockedIds, lockedEnds, handlerKey);
    }
    if (!newIds.isEmpty()) {
      dsl.execute(
          insertRows, handlerKey, newIds.toArray(new Long[0]), newEnds.toArray(new Long[0]));
    }
    return held;
  }

  /**
   * Takes the handler row's lock for an operation, waiting for the transaction holding it (a
   * refresh or registration, which may be a delivery in progress). A handler that has never run
   * gets a placeholder row for the lock, removed by {@link #unlock} so that its first poll still
   * registers it at its own start position. Returns true when a placeholder was made.
   */
  public boolean lock(DSLContext dsl) {
    // Waits for a registration in progress (see register), then for the row's lock.
    dsl.select(function("pg_advisory_xact_lock", SQLDataType.OTHER, val(registrationLock)))
        .execute();
    int inserted =
        dsl.insertInto(h, HANDLER_KEY, HORIZON)
            .values(handlerKey, 0L)
            .onConflictDoNothing()
            .execute();
    if (inserted == 1) {
      return true;
    }
    dsl.select(HANDLER_KEY).from(h).where(HANDLER_KEY.eq(handlerKey)).forUpdate().fetch();
    return false;
  }

  /** Removes the placeholder {@link #lock} made (still holding its lock until commit). */
  public void unlock(DSLContext dsl, boolean placeholder) {
    if (placeholder) {
      dsl.deleteFrom(h).where(HANDLER_KEY.eq(handlerKey)).execute();
    }
  }
}
