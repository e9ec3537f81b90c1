package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.any;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.inline;
import static org.jooq.impl.DSL.max;
import static org.jooq.impl.DSL.select;
import static org.messagepump.eventstream.internal.EventTables.CHECKPOINT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.FAILURES;
import static org.messagepump.eventstream.internal.EventTables.HANDLER_KEY;
import static org.messagepump.eventstream.internal.EventTables.LATEST_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.PARKED_AT;
import static org.messagepump.eventstream.internal.EventTables.PARKED_REASON;
import static org.messagepump.eventstream.internal.EventTables.RESUME_AT;
import static org.messagepump.eventstream.internal.EventTables.STREAM_END;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;
import static org.messagepump.eventstream.internal.EventTables.STREAM_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.TURN;
import static org.messagepump.eventstream.internal.EventTables.TYPE;
import static org.messagepump.eventstream.internal.EventTables.UPDATED_AT;
import static org.messagepump.eventstream.internal.EventTables.column;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.Param;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.Inputs;
import org.messagepump.core.spi.StatementCache;

/**
 * The SQL of one handler's checkpoints: claiming a pending stream, finding the next events of the
 * handler's types, and moving, postponing or parking the checkpoint (a postponement puts the row at
 * the back of the handler's round-robin queue; a move keeps its turn, the driver's cursor passes
 * it). Every statement after a claim is guarded by the claimed checkpoint offset.
 */
public final class CheckpointQueries {

  /**
   * A checkpoint row this transaction holds, with the stream's end as the row knows it (every event
   * below it is committed).
   */
  public record LockedCheckpoint(long streamId, long checkpoint, int failures, long nextOffset) {}

  private static final Param<String> HANDLER =
      StatementCache.parameter("handler", SQLDataType.CLOB);
  private static final Param<Long> STREAM = StatementCache.parameter("stream", SQLDataType.BIGINT);
  private static final Param<Long> CHECKPOINT =
      StatementCache.parameter("checkpoint", SQLDataType.BIGINT);
  private static final Param<Long> NEXT =
      StatementCache.parameter("next", CHECKPOINT_OFFSET.getDataType());
  private static final Param<Integer> FAILURE_COUNT =
      StatementCache.parameter("failures", SQLDataType.INTEGER);

  private final String handlerKey;
  private final String[] types;
  private final Sql sql;

  /**
   * Queries for one handler of the store in {@code tables} and the event types it wants. Each is
   * built by jOOQ and rendered once per schema ({@link StatementCache#render}, {@link
   * EventTables#statements}), then run through JDBC with every value bound: neither a driver nor a
   * delivery builds and renders a query.
   */
  public CheckpointQueries(EventTables tables, String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = types.toArray(new String[0]);
    this.sql = tables.statements(Sql.class, Sql::new);
  }

  /** The statements, rendered once per schema ({@link EventTables#statements}). */
  private static final class Sql {
    private final StatementCache.Statement setOffsetSql;
    private final StatementCache.Statement firstPendingSql;
    private final StatementCache.Statement waitForStreamSql;
    private final StatementCache.Statement relockSql;
    private final StatementCache.Statement untrackedSql;
    private final StatementCache.Statement nextEventsSql;
    private final StatementCache.Statement postponeSql;
    private final StatementCache.Statement parkSql;
    private final StatementCache.Statement giveBackSql;

    Sql(EventTables tables) {
      Table<Record> cp = tables.checkpoints;
      this.setOffsetSql =
          StatementCache.render(
              dsl ->
                  dsl.update(cp)
                      .set(CHECKPOINT_OFFSET, NEXT)
                      .set(FAILURES, inline(0))
                      .set(UPDATED_AT, EventTables.clockTimestamp())
                      .where(guard()),
              "next",
              "handler",
              "stream",
              "checkpoint");
      this.firstPendingSql =
          StatementCache.render(
              dsl -> {
                // The handler row, shared: not while an operation holds it (see waitForPending).
                CommonTableExpression<Record1<Integer>> free =
                    DSL.name("free")
                        .as(
                            DSL.selectOne()
                                .from(tables.handlers)
                                .where(HANDLER_KEY.eq(HANDLER))
                                .forKeyShare()
                                .skipLocked());
                return dsl.with(free)
                    .select(STREAM_ID)
                    .from(cp)
                    .where(PendingClaim.ready())
                    .andExists(DSL.selectOne().from(free))
                    .orderBy(TURN)
                    .limit(inline(1));
              },
              "handler",
              "exclude");
      this.waitForStreamSql =
          StatementCache.render(
              dsl ->
                  dsl.select(STREAM_ID, CHECKPOINT_OFFSET, FAILURES, STREAM_END)
                      .from(cp)
                      .where(PendingClaim.ready())
                      .and(STREAM_ID.eq(STREAM))
                      .forUpdate(),
              "handler",
              "exclude",
              "stream");
      this.relockSql =
          StatementCache.render(
              dsl ->
                  dsl.select(STREAM_ID, CHECKPOINT_OFFSET, FAILURES, STREAM_END)
                      .from(cp)
                      .where(guard())
                      .and(PARKED_AT.isNull())
                      .forUpdate()
                      .skipLocked(),
              "handler",
              "stream",
              "checkpoint");
      this.untrackedSql =
          StatementCache.render(
              dsl ->
                  dsl.selectOne()
                      .where(
                          DSL.exists(
                              dsl.selectOne()
                                  .from(cp)
                                  .where(HANDLER_KEY.eq(HANDLER))
                                  .and(STREAM_ID.eq(STREAM)))),
              "handler",
              "stream");
      Param<String[]> typeNames = StatementCache.parameter("types", SQLDataType.CLOB.array());
      Table<Record> st = tables.streamTypes;
      this.nextEventsSql =
          StatementCache.render(
              dsl ->
                  dsl.select(EventRows.jdbcColumns(tables.events))
                      .from(tables.events)
                      .where(STREAM_ID.eq(STREAM))
                      .and(
                          STREAM_OFFSET.between(
                              CHECKPOINT,
                              field(
                                  select(max(column(st, LATEST_OFFSET)))
                                      .from(st)
                                      .where(column(st, STREAM_ID).eq(STREAM))
                                      .and(column(st, TYPE).eq(any(typeNames))))))
                      .and(TYPE.eq(any(typeNames)))
                      .orderBy(STREAM_OFFSET)
                      .limit(StatementCache.parameter("limit", SQLDataType.INTEGER)),
              "stream",
              "checkpoint",
              "types",
              "limit");
      this.postponeSql =
          StatementCache.render(
              dsl ->
                  dsl.update(cp)
                      .set(FAILURES, FAILURE_COUNT)
                      .set(
                          RESUME_AT,
                          DatabaseClock.afterSecondsOffset(
                              StatementCache.parameter("seconds", SQLDataType.DOUBLE)))
                      .set(TURN, EventTables.nextTurn())
                      .set(UPDATED_AT, EventTables.clockTimestamp())
                      .where(guard()),
              "failures",
              "seconds",
              "handler",
              "stream",
              "checkpoint");
      this.parkSql =
          StatementCache.render(
              dsl ->
                  dsl.update(cp)
                      .set(FAILURES, FAILURE_COUNT)
                      .set(PARKED_AT, EventTables.clockTimestamp())
                      .set(PARKED_REASON, StatementCache.parameter("reason", SQLDataType.CLOB))
                      .set(UPDATED_AT, EventTables.clockTimestamp())
                      .where(guard()),
              "failures",
              "reason",
              "handler",
              "stream",
              "checkpoint");
      this.giveBackSql =
          StatementCache.render(
              dsl ->
                  dsl.update(cp)
                      .set(CHECKPOINT_OFFSET, NEXT)
                      .set(FAILURES, FAILURE_COUNT)
                      .where(guard()),
              "next",
              "failures",
              "handler",
              "stream",
              "checkpoint");
    }
  }

  /** The advisory lock key of a handler with minimal concurrency. */
  public static long handlerLockKey(String schema, String handlerKey) {
    return lockKey("messagepump.eventstream.handler:" + qualified(schema, handlerKey));
  }

  /** The advisory lock key a transaction registering a handler holds. */
  public static long registrationLockKey(String schema, String handlerKey) {
    return lockKey("messagepump.eventstream.register:" + schema + "/" + handlerKey);
  }

  private static long lockKey(String s) {
    int reversed = new StringBuilder(s).reverse().toString().hashCode();
    return ((long) s.hashCode() << 32) | (reversed & 0xffffffffL);
  }

  private static String qualified(String schema, String handlerKey) {
    return EventTables.SCHEMA.equals(schema) ? handlerKey : schema + "/" + handlerKey;
  }

  /**
   * Locks the handler's first pending (checkpoint below the stream's known end), unparked, due
   * checkpoint row in {@code turn} order, waiting for it if another transaction holds it (a
   * delivery of this handler about to commit): used when nothing was free to claim, under a lock
   * timeout. The partial index {@code handler_checkpoints_ready_idx} holds only pending rows, so
   * the cost does not grow with the number of caught-up streams. Returns null when there is none,
   * or when the row waited for is no longer ready once its holder is done.
   *
   * <p>The row is chosen without a lock, then locked alone and checked again. One {@code SELECT ...
   * ORDER BY turn LIMIT 1 FOR UPDATE} would be wrong here: when the row it waited for fails the
   * re-check (the delivery caught its stream up), PostgreSQL keeps that row locked and goes on to
   * wait for the next one, so the transaction would hold one row while waiting for another, a cycle
   * with an operation that locks both (a {@code reset} in the caller's transaction: deadlock
   * detected). Locked alone, a row that fails its re-check stays locked until the acquisition ends,
   * but nothing more is waited for.
   *
   * <p>The transaction may hold a row all the same: a claim that found nothing may have locked one.
   * Its {@code FOR UPDATE SKIP LOCKED LIMIT 1} locks a row that another transaction committed an
   * update to after the claim's snapshot, re-checks the new version, and when that no longer
   * qualifies (caught up, or claimed meanwhile) keeps the row locked and returns nothing. Waiting
   * then closed the same cycle with a reset (deadlock detected in about one run in eight of 20
   * rebuilds under load, with the statements of both in the server log). So the row is chosen only
   * while the handler row can be locked {@code FOR KEY SHARE} ({@code SKIP LOCKED}): not while an
   * operation holds it ({@code FOR UPDATE}, taken before any checkpoint row), and once this
   * transaction has it, an operation waits for it before locking any checkpoint row. Either way no
   * operation holds a checkpoint row this wait could wait for. Other acquisitions are not held up:
   * they take the handler row {@code SKIP LOCKED} for a refresh, and a shared lock does not stop
   * another wait.
   */
  public LockedCheckpoint waitForPending(Connection c, Collection<Long> exclude) {
    Long[] excluded = exclude.toArray(new Long[0]);
    return Jdbc.unchecked(
        "waiting for a pending stream",
        () -> {
          Long stream = Jdbc.firstLong(sql.firstPendingSql, c, handlerKey, excluded);
          return stream == null
              ? null
              : locked(sql.waitForStreamSql, c, handlerKey, excluded, stream);
        });
  }

  /**
   * Locks the handler's checkpoint of {@code streamId} again, {@code SKIP LOCKED}, if it is
   * unparked and still at {@code checkpoint}: for counting the failure of a delivery whose
   * transaction was rolled back. Returns null when the row is held by another transaction, parked,
   * has moved, or does not exist (see {@link #untracked}). The resume time is not checked: the
   * failed delivery was due.
   */
  public LockedCheckpoint relock(Connection c, long streamId, long checkpoint) throws SQLException {
    return locked(sql.relockSql, c, handlerKey, streamId, checkpoint);
  }

  private static LockedCheckpoint locked(StatementCache.Statement s, Connection c, Object... values)
      throws SQLException {
    try (PreparedStatement ps = s.prepare(c, values);
        ResultSet rs = ps.executeQuery()) {
      return rs.next()
          ? new LockedCheckpoint(rs.getLong(1), rs.getLong(2), rs.getInt(3), rs.getLong(4))
          : null;
    }
  }

  /** True when the handler has no checkpoint row of {@code streamId} (as this statement sees). */
  public boolean untracked(Connection c, long streamId) throws SQLException {
    return !Jdbc.anyRow(sql.untrackedSql, c, handlerKey, streamId);
  }

  /**
   * Up to {@code limit} committed events of the handler's types at or after the claim's checkpoint,
   * in offset order. The stream's type index answers first when the stream holds nothing relevant
   * past it.
   */
  public List<EventRows.Row> nextEvents(Connection c, LockedCheckpoint claim, int limit)
      throws SQLException {
    List<EventRows.Row> rows = new ArrayList<>();
    try (PreparedStatement ps =
            sql.nextEventsSql.prepare(c, claim.streamId(), claim.checkpoint(), types, limit);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        rows.add(EventRows.toRow(rs, 1, claim.streamId()));
      }
    }
    return rows;
  }

  /**
   * Sets a held checkpoint from {@code old} to {@code next} and resets its failures: the one
   * statement every handled delivery (or batch of one stream) costs. The row keeps its turn (the
   * driver's cursor moves past it instead), so while the stream still has a backlog the update
   * changes no indexed value, and PostgreSQL can make it a HOT update: no index entry per delivery
   * (V4 migration).
   *
   * <p>Built by jOOQ and rendered once ({@link StatementCache}), run through plain JDBC with every
   * value bound, like {@link PendingClaim}: building and rendering the update per delivery cost the
   * client about a third of its CPU per delivery at batch size 1 (docs/performance-notes.md).
   * Covered by every driver test.
   */
  public void setOffset(Connection c, long streamId, long old, long next) throws SQLException {
    expectOne(sql.setOffsetSql.executeUpdate(c, next, handlerKey, streamId, old), streamId, old);
  }

  /**
   * Undoes a claim's bookkeeping on a row this transaction holds: the checkpoint back from {@code
   * stored} to {@code checkpoint} and the failure count as it was, the row's turn unchanged. For a
   * claim that is not served after all (see {@link PendingClaim.Claimed#overtaken()}).
   */
  public void giveBack(Connection c, long streamId, long stored, long checkpoint, int failures)
      throws SQLException {
    expectOne(
        sql.giveBackSql.executeUpdate(c, checkpoint, failures, handlerKey, streamId, stored),
        streamId,
        stored);
  }

  /** Makes a held stream due again after {@code delay} with a new failure count. */
  public void postpone(Connection c, long streamId, long checkpoint, int failures, Duration delay)
      throws SQLException {
    int n =
        sql.postponeSql.executeUpdate(
            c, failures, DatabaseClock.seconds(delay), handlerKey, streamId, checkpoint);
    expectOne(n, streamId, checkpoint);
  }

  /**
   * Parks a held stream for this handler: it is not read again until resumed. The reason is
   * sanitized again here (NUL and control characters replaced, length capped), so a park never
   * fails on its text whatever the caller passed.
   */
  public void park(Connection c, long streamId, long checkpoint, int failures, String reason)
      throws SQLException {
    int n =
        sql.parkSql.executeUpdate(
            c, failures, Inputs.reason(reason), handlerKey, streamId, checkpoint);
    expectOne(n, streamId, checkpoint);
  }

  /** The row of parameters {@code handler} and {@code stream} at parameter {@code checkpoint}. */
  private static Condition guard() {
    return HANDLER_KEY.eq(HANDLER).and(STREAM_ID.eq(STREAM)).and(CHECKPOINT_OFFSET.eq(CHECKPOINT));
  }

  private void expectOne(int updated, long streamId, long checkpoint) {
    if (updated != 1) {
      // The row is locked by this transaction since acquisition; anything else is a locking bug.
      throw new IllegalStateException(
          "handler '"
              + handlerKey
              + "': checkpoint of stream "
              + streamId
              + " is no longer at "
              + checkpoint);
    }
  }
}
