package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.all;
import static org.jooq.impl.DSL.any;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.max;
import static org.jooq.impl.DSL.noCondition;
import static org.jooq.impl.DSL.select;
import static org.jooq.impl.DSL.val;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record4;
import org.jooq.impl.DSL;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.Inputs;

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
  private final Tables.Checkpoints cp;
  private final Tables.Streams streams;
  private final Tables.StreamTypes streamTypes;
  private final Tables.Events events;
  private final EventRows rows;
  private final String setOffsetSql;

  /** Queries for one handler of the store in {@code tables} and the event types it wants. */
  public CheckpointQueries(Tables tables, String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = types.toArray(new String[0]);
    this.cp = tables.checkpoints;
    this.streams = tables.streams;
    this.streamTypes = tables.streamTypes;
    this.events = tables.events;
    this.rows = new EventRows(tables);
    this.setOffsetSql =
        "UPDATE "
            + tables.quoted("handler_checkpoints")
            + " SET checkpoint_offset = ?, failures = 0,"
            + " updated_at = clock_timestamp()"
            + " WHERE handler_key = ? AND stream_id = ? AND checkpoint_offset = ?";
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
    return Tables.DEFAULT_SCHEMA.equals(schema) ? handlerKey : schema + "/" + handlerKey;
  }

  /** Excludes the given ids with one bound {@code bigint[]} parameter, however many there are. */
  private static Condition notIn(Field<Long> id, Collection<Long> exclude) {
    return exclude.isEmpty() ? noCondition() : id.ne(all(val(exclude.toArray(new Long[0]))));
  }

  private Condition mine() {
    return cp.handlerKey.eq(handlerKey);
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
        dsl.select(cp.streamId, cp.offset, cp.failures, cp.streamEnd)
            .from(cp.table)
            .where(mine())
            .and(DSL.condition(cp.pending))
            .and(cp.parkedAt.isNull())
            .and(cp.resumeAt.le(Tables.clockTimestamp()))
            .and(notIn(cp.streamId, exclude))
            .orderBy(cp.turn)
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
        dsl.select(cp.streamId, cp.offset, cp.failures, cp.streamEnd)
            .from(cp.table)
            .where(guard(streamId, checkpoint))
            .and(cp.parkedAt.isNull())
            .forUpdate()
            .skipLocked()
            .fetchOne();
    return r == null ? null : new LockedCheckpoint(r.value1(), r.value2(), r.value3(), r.value4());
  }

  /** True when the handler has no checkpoint row of {@code streamId} (as this statement sees). */
  public boolean untracked(DSLContext dsl, long streamId) {
    return !dsl.fetchExists(
        dsl.selectOne().from(cp.table).where(mine()).and(cp.streamId.eq(streamId)));
  }

  /**
   * Up to {@code limit} committed events of the handler's types at or after the claim's checkpoint,
   * in offset order. The stream's type index answers first when the stream holds nothing relevant
   * past it.
   */
  public List<EventRows.Row> nextEvents(DSLContext dsl, LockedCheckpoint claim, int limit) {
    Field<Long> latest =
        field(
            select(max(streamTypes.latestOffset))
                .from(streamTypes.table)
                .where(streamTypes.streamId.eq(claim.streamId()))
                .and(streamTypes.type.eq(any(val(types)))));
    return dsl.select(rows.columns())
        .from(events.table)
        .where(events.streamId.eq(claim.streamId()))
        .and(events.offset.between(val(claim.checkpoint()), latest))
        .and(events.type.eq(any(val(types))))
        .orderBy(events.offset)
        .limit(limit)
        .fetch(rows::toRow);
  }

  /**
   * Sets a held checkpoint from {@code old} to {@code next} and resets its failures: the one
   * statement every handled delivery (or batch of one stream) costs. The row keeps its turn (the
   * driver's cursor moves past it instead), so while the stream still has a backlog the update
   * changes no indexed value, and PostgreSQL can make it a HOT update: no index entry per delivery
   * (V4 migration).
   *
   * <p>Plain JDBC with a fixed text, like {@link PendingClaim}: building and rendering the jOOQ
   * update per delivery cost the client about a third of its CPU per delivery at batch size 1
   * (docs/performance-notes.md). The names are quoted identifiers of a validated schema; every
   * value is bound. Covered by every driver test.
   */
  public void setOffset(Connection c, long streamId, long old, long next) throws SQLException {
    int n;
    try (PreparedStatement ps = c.prepareStatement(setOffsetSql)) {
      ps.setLong(1, next);
      ps.setString(2, handlerKey);
      ps.setLong(3, streamId);
      ps.setLong(4, old);
      n = ps.executeUpdate();
    }
    expectOne(n, streamId, old);
  }

  /** Makes a held stream due again after {@code delay} with a new failure count. */
  public void postpone(
      DSLContext dsl, long streamId, long checkpoint, int failures, Duration delay) {
    int n =
        dsl.update(cp.table)
            .set(cp.failures, failures)
            .set(cp.resumeAt, DatabaseClock.afterOffset(delay))
            .set(cp.turn, Tables.nextTurn())
            .set(cp.updatedAt, Tables.clockTimestamp())
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
        dsl.update(cp.table)
            .set(cp.failures, failures)
            .set(cp.parkedAt, Tables.clockTimestamp())
            .set(cp.parkedReason, Inputs.reason(reason))
            .set(cp.updatedAt, Tables.clockTimestamp())
            .where(guard(streamId, checkpoint))
            .execute();
    expectOne(n, streamId, checkpoint);
  }

  private Condition guard(long streamId, long checkpoint) {
    return mine().and(cp.streamId.eq(streamId)).and(cp.offset.eq(checkpoint));
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
