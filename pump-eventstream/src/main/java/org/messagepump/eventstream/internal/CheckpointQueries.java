package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.all;
import static org.jooq.impl.DSL.any;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.inline;
import static org.jooq.impl.DSL.max;
import static org.jooq.impl.DSL.noCondition;
import static org.jooq.impl.DSL.select;
import static org.jooq.impl.DSL.val;
import static org.messagepump.eventstream.internal.EventTables.CHECKPOINT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.FAILURES;
import static org.messagepump.eventstream.internal.EventTables.HANDLER_KEY;
import static org.messagepump.eventstream.internal.EventTables.LATEST_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.PARKED_AT;
import static org.messagepump.eventstream.internal.EventTables.PARKED_REASON;
import static org.messagepump.eventstream.internal.EventTables.PENDING;
import static org.messagepump.eventstream.internal.EventTables.RESUME_AT;
import static org.messagepump.eventstream.internal.EventTables.STREAM_END;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;
import static org.messagepump.eventstream.internal.EventTables.STREAM_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.TURN;
import static org.messagepump.eventstream.internal.EventTables.TYPE;
import static org.messagepump.eventstream.internal.EventTables.UPDATED_AT;
import static org.messagepump.eventstream.internal.EventTables.column;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Record4;
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

  private final String handlerKey;
  private final String[] types;
  private final Table<Record> cp;
  private final EventTables tables;
  private final StatementCache.Statement setOffsetSql;

  /** Queries for one handler of the store in {@code tables} and the event types it wants. */
  public CheckpointQueries(EventTables tables, String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = types.toArray(new String[0]);
    this.cp = tables.checkpoints;
    this.tables = tables;
    this.setOffsetSql =
        StatementCache.render(
            dsl ->
                dsl.update(cp)
                    .set(
                        CHECKPOINT_OFFSET,
                        StatementCache.parameter("next", CHECKPOINT_OFFSET.getDataType()))
                    .set(FAILURES, inline(0))
                    .set(UPDATED_AT, EventTables.clockTimestamp())
                    .where(HANDLER_KEY.eq(StatementCache.parameter("handler", SQLDataType.CLOB)))
                    .and(STREAM_ID.eq(StatementCache.parameter("stream", SQLDataType.BIGINT)))
                    .and(
                        CHECKPOINT_OFFSET.eq(
                            StatementCache.parameter("old", CHECKPOINT_OFFSET.getDataType()))),
            "next",
            "handler",
            "stream",
            "old");
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

  /** Excludes the given ids with one bound {@code bigint[]} parameter, however many there are. */
  private static Condition notIn(Field<Long> id, Collection<Long> exclude) {
    return exclude.isEmpty() ? noCondition() : id.ne(all(val(exclude.toArray(new Long[0]))));
  }

  private Condition mine() {
    return HANDLER_KEY.eq(handlerKey);
  }

  /**
   * Locks the handler's first pending (checkpoint below the stream's known end), unparked, due
   * checkpoint row in {@code turn} order, waiting for a row another transaction holds (a delivery
   * of this handler about to commit): used when nothing was free to claim, under a lock timeout.
   * The partial index {@code handler_checkpoints_ready_idx} holds only pending rows, so the cost
   * does not grow with the number of caught-up streams. Returns null when there is none.
   */
  public LockedCheckpoint waitForPending(DSLContext dsl, Collection<Long> exclude) {
    var query =
        dsl.select(STREAM_ID, CHECKPOINT_OFFSET, FAILURES, STREAM_END)
            .from(cp)
            .where(mine())
            .and(DSL.condition(PENDING))
            .and(PARKED_AT.isNull())
            .and(RESUME_AT.le(EventTables.clockTimestamp()))
            .and(notIn(STREAM_ID, exclude))
            .orderBy(TURN)
            .limit(1)
            .forUpdate();
    Record4<Long, Long, Integer, Long> r = query.fetchOne();
    return r == null ? null : new LockedCheckpoint(r.value1(), r.value2(), r.value3(), r.value4());
  }

  /**
   * Locks the handler's checkpoint of {@code streamId} again, {@code SKIP LOCKED}, if it is
   * unparked and still at {@code checkpoint}: for counting the failure of a delivery whose
   * transaction was rolled back. Returns null when the row is held by another transaction, parked,
   * has moved, or does not exist (see {@link #untracked}). The resume time is not checked: the
   * failed delivery was due.
   */
  public LockedCheckpoint relock(DSLContext dsl, long streamId, long checkpoint) {
    Record4<Long, Long, Integer, Long> r =
        dsl.select(STREAM_ID, CHECKPOINT_OFFSET, FAILURES, STREAM_END)
            .from(cp)
            .where(guard(streamId, checkpoint))
            .and(PARKED_AT.isNull())
            .forUpdate()
            .skipLocked()
            .fetchOne();
    return r == null ? null : new LockedCheckpoint(r.value1(), r.value2(), r.value3(), r.value4());
  }

  /** True when the handler has no checkpoint row of {@code streamId} (as this statement sees). */
  public boolean untracked(DSLContext dsl, long streamId) {
    return !dsl.fetchExists(dsl.selectOne().from(cp).where(mine()).and(STREAM_ID.eq(streamId)));
  }

  /**
   * Up to {@code limit} committed events of the handler's types at or after the claim's checkpoint,
   * in offset order. The stream's type index answers first when the stream holds nothing relevant
   * past it.
   */
  public List<EventRows.Row> nextEvents(DSLContext dsl, LockedCheckpoint claim, int limit) {
    Table<Record> st = tables.streamTypes;
    Field<Long> latest =
        field(
            select(max(column(st, LATEST_OFFSET)))
                .from(st)
                .where(column(st, STREAM_ID).eq(claim.streamId()))
                .and(column(st, TYPE).eq(any(val(types)))));
    return dsl.select(EventRows.COLUMNS)
        .from(tables.events)
        .where(STREAM_ID.eq(claim.streamId()))
        .and(STREAM_OFFSET.between(val(claim.checkpoint()), latest))
        .and(TYPE.eq(any(val(types))))
        .orderBy(STREAM_OFFSET)
        .limit(limit)
        .fetch(EventRows::toRow);
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
    expectOne(setOffsetSql.executeUpdate(c, next, handlerKey, streamId, old), streamId, old);
  }

  /** Makes a held stream due again after {@code delay} with a new failure count. */
  public void postpone(
      DSLContext dsl, long streamId, long checkpoint, int failures, Duration delay) {
    int n =
        dsl.update(cp)
            .set(FAILURES, failures)
            .set(RESUME_AT, DatabaseClock.afterOffset(delay))
            .set(TURN, EventTables.nextTurn())
            .set(UPDATED_AT, EventTables.clockTimestamp())
            .where(guard(streamId, checkpoint))
            .execute();
    expectOne(n, streamId, checkpoint);
  }

  /**
   * Parks a held stream for this handler: it is not read again until resumed. The reason is
   * sanitized again here (NUL and control characters replaced, length capped), so a park never
   * fails on its text whatever the caller passed.
   */
  public void park(DSLContext dsl, long streamId, long checkpoint, int failures, String reason) {
    int n =
        dsl.update(cp)
            .set(FAILURES, failures)
            .set(PARKED_AT, EventTables.clockTimestamp())
            .set(PARKED_REASON, Inputs.reason(reason))
            .set(UPDATED_AT, EventTables.clockTimestamp())
            .where(guard(streamId, checkpoint))
            .execute();
    expectOne(n, streamId, checkpoint);
  }

  private Condition guard(long streamId, long checkpoint) {
    return mine().and(STREAM_ID.eq(streamId)).and(CHECKPOINT_OFFSET.eq(checkpoint));
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
