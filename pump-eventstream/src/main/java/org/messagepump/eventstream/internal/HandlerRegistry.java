package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.any;
import static org.jooq.impl.DSL.function;
import static org.jooq.impl.DSL.inline;
import static org.jooq.impl.DSL.val;
import static org.messagepump.eventstream.internal.EventTables.CHANGED_XID;
import static org.messagepump.eventstream.internal.EventTables.CHECKPOINT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.DEFERRED;
import static org.messagepump.eventstream.internal.EventTables.HANDLER_KEY;
import static org.messagepump.eventstream.internal.EventTables.HORIZON;
import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.NEXT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.START_POSITION;
import static org.messagepump.eventstream.internal.EventTables.STREAM_END;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;
import static org.messagepump.eventstream.internal.EventTables.TURN;
import static org.messagepump.eventstream.internal.EventTables.column;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jooq.CommonTableExpression;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.SelectForUpdateStep;
import org.jooq.Table;
import org.jooq.UpdateConditionStep;
import org.jooq.UpdateSetStep;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.StatementCache;

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

  private static final Param<String> HANDLER =
      StatementCache.parameter("handler", SQLDataType.CLOB);
  private static final Param<Long[]> IDS =
      StatementCache.parameter("ids", SQLDataType.BIGINT.array());
  private static final Param<Long[]> ENDS =
      StatementCache.parameter("ends", SQLDataType.BIGINT.array());

  private final String handlerKey;
  private final long registrationLock;
  private final Sql sql;

  /**
   * The registry of one handler in the store of {@code tables}. Its statements are built by jOOQ
   * and rendered once per schema ({@link StatementCache#render}, {@link EventTables#statements}),
   * run through JDBC with every value bound.
   */
  public HandlerRegistry(EventTables tables, String handlerKey) {
    this.handlerKey = handlerKey;
    this.registrationLock = CheckpointQueries.registrationLockKey(tables.schema(), handlerKey);
    this.sql = tables.statements(Sql.class, Sql::new);
  }

  /** The statements, rendered once per schema ({@link EventTables#statements}). */
  private static final class Sql {
    private final StatementCache.Statement refreshSql;
    private final StatementCache.Statement advanceHorizon;
    private final StatementCache.Statement existingRows;
    private final StatementCache.Statement lockableRows;
    private final StatementCache.Statement endsOfCaughtUp;
    private final StatementCache.Statement endsOfPending;
    private final StatementCache.Statement insertRows;
    private final StatementCache.Statement insertHandler;
    private final StatementCache.Statement registerFromStart;
    private final StatementCache.Statement registerFromEnd;

    Sql(EventTables tables) {
      Table<Record> h = tables.handlers;
      Table<Record> cp = tables.checkpoints;
      // One statement, one snapshot: the handler row, locked SKIP LOCKED, with the snapshot's xmin
      // (the next horizon) and, when the row was not had, whether it exists at all (held by another
      // transaction) or must be registered; then, when the lock was had, the streams changed since
      // its horizon or deferred by the last refresh. The first branch always gives exactly one row
      // (its changed-stream columns null), the second one row per changed stream. The scan's
      // snapshot is the one the xmin comes from, so the horizon argument below holds as for two
      // statements; one round trip instead of two at every refresh of a catch-up.
      this.refreshSql =
          StatementCache.render(
              dsl -> {
                CommonTableExpression<?> l =
                    DSL.name("l")
                        .as(
                            dsl.select(HORIZON, DEFERRED)
                                .from(h)
                                .where(HANDLER_KEY.eq(HANDLER))
                                .forUpdate()
                                .skipLocked());
                Table<?> lRef = DSL.table(DSL.name("l"));
                Field<Long> horizon = column(lRef, HORIZON);
                Field<Long[]> deferred = column(lRef, DEFERRED);
                Table<?> s = tables.streams.as("s");
                return dsl.with(l)
                    .select(
                        horizon,
                        deferred,
                        EventTables.snapshotXmin(),
                        DSL.when(
                                horizon.isNull(),
                                DSL.field(
                                    DSL.exists(
                                        dsl.selectOne().from(h).where(HANDLER_KEY.eq(HANDLER)))))
                            .otherwise(DSL.inline(true)),
                        DSL.castNull(SQLDataType.BIGINT),
                        DSL.castNull(SQLDataType.BIGINT))
                    .from(dsl.selectOne().asTable("one"))
                    .leftJoin(lRef)
                    .on(DSL.trueCondition())
                    .unionAll(
                        dsl.select(
                                DSL.castNull(SQLDataType.BIGINT),
                                DSL.castNull(SQLDataType.BIGINT.array()),
                                DSL.castNull(SQLDataType.BIGINT),
                                DSL.castNull(SQLDataType.BOOLEAN),
                                column(s, ID),
                                column(s, NEXT_OFFSET))
                            .from(s, lRef)
                            .where(
                                column(s, CHANGED_XID)
                                    .ge(horizon)
                                    .or(column(s, ID).eq(DSL.any(deferred)))));
              },
              "handler");
      this.advanceHorizon =
          StatementCache.render(
              dsl ->
                  dsl.update(h)
                      .set(HORIZON, StatementCache.parameter("horizon", SQLDataType.BIGINT))
                      .set(DEFERRED, StatementCache.parameter("deferred", DEFERRED.getDataType()))
                      .where(HANDLER_KEY.eq(HANDLER)),
              "horizon",
              "deferred",
              "handler");
      this.existingRows = StatementCache.render(dsl -> rowsOf(dsl, cp), "handler", "ids");
      this.lockableRows =
          StatementCache.render(dsl -> rowsOf(dsl, cp).forUpdate().skipLocked(), "handler", "ids");
      // A row that becomes pending takes a new turn (the back of the queue); a pending one keeps
      // it.
      this.endsOfCaughtUp =
          StatementCache.render(
              dsl -> {
                Table<Record> c = cp.as("c");
                return endsFrom(dsl.update(c).set(TURN, EventTables.nextTurn()), c)
                    .and(column(c, CHECKPOINT_OFFSET).ge(column(c, STREAM_END)));
              },
              "ids",
              "ends",
              "handler");
      this.endsOfPending =
          StatementCache.render(
              dsl -> {
                Table<Record> c = cp.as("c");
                return endsFrom(dsl.update(c), c);
              },
              "ids",
              "ends",
              "handler");
      this.insertRows =
          StatementCache.render(
              dsl -> {
                Table<Record> v = changed();
                return dsl.insertInto(cp, HANDLER_KEY, STREAM_ID, CHECKPOINT_OFFSET, STREAM_END)
                    .select(dsl.select(HANDLER, v(STREAM_ID), inline(0L), v(STREAM_END)).from(v))
                    .onConflict(HANDLER_KEY, STREAM_ID)
                    .doNothing();
              },
              "handler",
              "ids",
              "ends");
      Param<String> start = StatementCache.parameter("start", SQLDataType.CLOB);
      this.insertHandler =
          StatementCache.render(
              dsl ->
                  dsl.insertInto(h, HANDLER_KEY, HORIZON, START_POSITION)
                      .select(dsl.select(HANDLER, EventTables.snapshotXmin(), start))
                      .onConflictDoNothing()
                      .returningResult(HORIZON),
              "handler",
              "start");
      this.registerFromStart =
          StatementCache.render(dsl -> register(dsl, tables, inline(0L)), "handler");
      this.registerFromEnd =
          StatementCache.render(dsl -> register(dsl, tables, NEXT_OFFSET), "handler");
    }
  }

  /** The handler's rows among the streams of parameter {@code ids}. */
  private static SelectForUpdateStep<Record1<Long>> rowsOf(DSLContext dsl, Table<Record> cp) {
    return dsl.select(STREAM_ID)
        .from(cp)
        .where(HANDLER_KEY.eq(HANDLER))
        .and(STREAM_ID.eq(any(IDS)));
  }

  /**
   * The changed streams and their ends, the bound arrays {@code ids} and {@code ends}: {@code v}.
   */
  private static Table<Record> changed() {
    return StatementCache.rows(false, "v", List.of("stream_id", "stream_end"), IDS, ENDS);
  }

  /** {@code column} of {@link #changed}. */
  private static Field<Long> v(Field<Long> column) {
    return DSL.field(DSL.name("v", column.getName()), column.getDataType());
  }

  /**
   * {@code update} (of checkpoints aliased {@code c}) setting each of the handler's rows' end to
   * its stream's changed end, where that is beyond the row's.
   */
  private static UpdateConditionStep<Record> endsFrom(
      UpdateSetStep<Record> update, Table<Record> c) {
    Table<Record> v = changed();
    return update
        .set(STREAM_END, v(STREAM_END))
        .from(v)
        .where(column(c, HANDLER_KEY).eq(HANDLER))
        .and(column(c, STREAM_ID).eq(v(STREAM_ID)))
        .and(v(STREAM_END).gt(column(c, STREAM_END)));
  }

  /**
   * Every existing stream with events gets its row: from {@code offset} (0, or the stream's end).
   */
  private static Query register(DSLContext dsl, EventTables tables, Field<Long> offset) {
    return dsl.insertInto(tables.checkpoints, HANDLER_KEY, STREAM_ID, CHECKPOINT_OFFSET, STREAM_END)
        .select(
            dsl.select(HANDLER, ID, offset, NEXT_OFFSET)
                .from(tables.streams)
                .where(NEXT_OFFSET.gt(inline(0L)))
                .orderBy(ID))
        .onConflictDoNothing();
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
    try (PreparedStatement ps = sql.refreshSql.prepare(c, handlerKey);
        ResultSet rs = ps.executeQuery()) {
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
    if (horizon == null) {
      // Held by another transaction (refreshing, registering, an operation), or no row yet.
      return exists ? Refresh.SKIPPED : register(c, start);
    }
    if (changed.isEmpty() && deferred.length == 0) {
      // Nothing changed since the horizon (as of this snapshot): keeping the old horizon is still
      // correct (a later scan from it finds a superset), and an unchanged handler writes nothing:
      // no row update per refresh while a catch-up (or any transaction elsewhere) runs.
      return Refresh.UNCHANGED;
    }
    List<Long> stillHeld = changed.isEmpty() ? List.of() : apply(c, changed);
    sql.advanceHorizon.executeUpdate(c, xmin, stillHeld.toArray(new Long[0]), handlerKey);
    return changed.isEmpty() ? Refresh.UNCHANGED : Refresh.CHANGED;
  }

  /**
   * Registers the handler unless its row exists (then another transaction holds it: false). A
   * concurrent registration makes this wait for it, once per handler key.
   */
  private Refresh register(Connection c, String start) throws SQLException {
    // Another transaction registering the handler holds this lock: do not wait for it (its
    // delivery may take long); this poll goes on without a refresh.
    if (!HandlerLock.tryLock(c, registrationLock)) {
      return Refresh.SKIPPED;
    }
    if (Jdbc.firstLong(sql.insertHandler, c, handlerKey, start) == null) {
      return Refresh.SKIPPED;
    }
    // Every existing stream with events gets its row now, in one statement: from 0, or from its
    // end. Streams this statement does not see were changed at or above the horizon: the next
    // refresh finds them. It also finds an empty stream once its first events are appended, and
    // creates its row from 0 (its end at registration): a row for an empty stream would only cost
    // registration time (200,000 streams, most of them empty, took seconds).
    ("END".equals(start) ? sql.registerFromEnd : sql.registerFromStart)
        .executeUpdate(c, handlerKey);
    return Refresh.CHANGED;
  }

  /** Updates the ends of the lockable rows, creates missing rows; returns the held streams. */
  private List<Long> apply(Connection c, List<long[]> changed) throws SQLException {
    Long[] ids = new Long[changed.size()];
    Long[] ends = new Long[changed.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = changed.get(i)[0];
      ends[i] = changed.get(i)[1];
    }
    Set<Long> existing = streams(sql.existingRows, c, ids);
    Set<Long> lockable = streams(sql.lockableRows, c, ids);
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
      sql.endsOfCaughtUp.executeUpdate(c, lockedIds, lockedEnds, handlerKey);
      sql.endsOfPending.executeUpdate(c, lockedIds, lockedEnds, handlerKey);
    }
    if (!newIds.isEmpty()) {
      sql.insertRows.executeUpdate(
          c, handlerKey, newIds.toArray(new Long[0]), newEnds.toArray(new Long[0]));
    }
    return held;
  }

  /** The stream ids the statement (of the handler's rows among {@code ids}) returns. */
  private Set<Long> streams(StatementCache.Statement s, Connection c, Long[] ids)
      throws SQLException {
    Set<Long> out = new HashSet<>();
    try (PreparedStatement ps = s.prepare(c, handlerKey, ids);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(rs.getLong(1));
      }
    }
    return out;
  }

  /**
   * Takes the handler row's lock for an operation, waiting for the transaction holding it (a
   * refresh or registration, which may be a delivery in progress). A handler that has never run
   * gets a placeholder row for the lock, removed by {@link #unlock} so that its first poll still
   * registers it at its own start position. Returns true when a placeholder was made.
   */
  public static boolean lock(DSLContext dsl, EventTables tables, String handlerKey) {
    Table<Record> h = tables.handlers;
    // Waits for a registration in progress (see register), then for the row's lock.
    long registrationLock = CheckpointQueries.registrationLockKey(tables.schema(), handlerKey);
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
  public static void unlock(
      DSLContext dsl, EventTables tables, String handlerKey, boolean placeholder) {
    if (placeholder) {
      dsl.deleteFrom(tables.handlers).where(HANDLER_KEY.eq(handlerKey)).execute();
    }
  }
}
