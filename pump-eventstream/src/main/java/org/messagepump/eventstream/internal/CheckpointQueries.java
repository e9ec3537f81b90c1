package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.all;
import static org.jooq.impl.DSL.any;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.function;
import static org.jooq.impl.DSL.max;
import static org.jooq.impl.DSL.noCondition;
import static org.jooq.impl.DSL.notExists;
import static org.jooq.impl.DSL.rand;
import static org.jooq.impl.DSL.select;
import static org.jooq.impl.DSL.selectOne;
import static org.jooq.impl.DSL.val;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record2;
import org.jooq.Record4;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.DatabaseClock;
import org.messagepump.core.Inputs;

/**
 * The SQL of one handler's checkpoints: claiming a stream (tracking a new one or locking a tracked
 * one), finding the next event of the handler's types, and moving, postponing or parking the
 * checkpoint. Every statement after a claim is guarded by the claimed checkpoint offset.
 */
public final class CheckpointQueries {

  /** A checkpoint row this transaction holds, with the stream's committed next offset. */
  public record LockedCheckpoint(long streamId, long checkpoint, int failures, long nextOffset) {}

  private final String handlerKey;
  private final String[] types;
  private final int trackingLockKey;
  private final Tables.Checkpoints cp;
  private final Tables.Streams streams;
  private final Tables.StreamTypes streamTypes;
  private final Tables.Events events;
  private final EventRows rows;

  /** Queries for one handler of the store in {@code tables} and the event types it wants. */
  public CheckpointQueries(Tables tables, String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = types.toArray(new String[0]);
    this.trackingLockKey = trackingLockKey(tables.schema, handlerKey);
    this.cp = tables.checkpoints;
    this.streams = tables.streams;
    this.streamTypes = tables.streamTypes;
    this.events = tables.events;
    this.rows = new EventRows(tables);
  }

  /**
   * The first half of the advisory lock a transaction holds while it starts tracking a stream. The
   * default schema keeps the key it had before schemas were configurable.
   */
  public static int trackingLockKey(String schema, String handlerKey) {
    return ("messagepump.eventstream.track:" + qualified(schema, handlerKey)).hashCode();
  }

  /** The advisory lock key of a handler with minimal concurrency. */
  public static long handlerLockKey(String schema, String handlerKey) {
    String s = "messagepump.eventstream.handler:" + qualified(schema, handlerKey);
    int reversed = new StringBuilder(s).reverse().toString().hashCode();
    return ((long) s.hashCode() << 32) | (reversed & 0xffffffffL);
  }

  private static String qualified(String schema, String handlerKey) {
    return Tables.DEFAULT_SCHEMA.equals(schema) ? handlerKey : schema + "/" + handlerKey;
  }

  /** The second half of the tracking lock: the stream id folded into an int. */
  public static int streamLockKey(long streamId) {
    return (int) (streamId ^ (streamId >>> 32));
  }

  /** Excludes the given ids with one bound {@code bigint[]} parameter, however many there are. */
  private static Condition notIn(Field<Long> id, Collection<Long> exclude) {
    return exclude.isEmpty() ? noCondition() : id.ne(all(val(exclude.toArray(new Long[0]))));
  }

  private Condition mine() {
    return cp.handlerKey.eq(handlerKey);
  }

  /**
   * Starts tracking a stream the handler does not track yet: inserts its checkpoint row (offset 0),
   * which this transaction then holds. Candidates that another transaction is starting to track are
   * skipped without waiting. Returns null when every stream is tracked or being tracked.
   */
  public LockedCheckpoint trackUntracked(DSLContext dsl, Collection<Long> exclude, int candidates) {
    List<Record2<Long, Long>> untracked =
        dsl.select(streams.id, streams.nextOffset)
            .from(streams.table)
            .where(
                notExists(selectOne().from(cp.table).where(mine()).and(cp.streamId.eq(streams.id))))
            .and(notIn(streams.id, exclude))
            .orderBy(rand())
            .limit(candidates)
            .fetch();
    for (Record2<Long, Long> s : untracked) {
      long streamId = s.value1();
      if (!tryTrackingLock(dsl, streamId)) {
        continue; // another transaction is starting to track it
      }
      Record2<Long, Integer> inserted =
          dsl.insertInto(cp.table, cp.handlerKey, cp.streamId)
              .values(handlerKey, streamId)
              .onConflictDoNothing()
              .returningResult(cp.offset, cp.failures)
              .fetchOne();
      if (inserted != null) {
        return new LockedCheckpoint(streamId, inserted.value1(), inserted.value2(), s.value2());
      }
    }
    return null;
  }

  /**
   * Locks the tracked, unparked, due checkpoint with the largest backlog, skipping rows other
   * transactions hold. Returns null when there is none.
   */
  public LockedCheckpoint lockTracked(DSLContext dsl, Collection<Long> exclude) {
    return lockTracked(dsl, exclude, true);
  }

  /**
   * As {@link #lockTracked(DSLContext, Collection)}, but waits for a row another transaction holds
   * (a delivery of this handler about to commit): used when nothing is free, under a lock timeout.
   */
  public LockedCheckpoint waitForTracked(DSLContext dsl, Collection<Long> exclude) {
    return lockTracked(dsl, exclude, false);
  }

  private LockedCheckpoint lockTracked(
      DSLContext dsl, Collection<Long> exclude, boolean skipLocked) {
    Field<Long> next = nextOffsetOf(cp.streamId);
    var query =
        dsl.select(cp.streamId, cp.offset, cp.failures, next)
            .from(cp.table)
            .where(mine())
            .and(cp.parkedAt.isNull())
            .and(cp.resumeAt.le(Tables.clockTimestamp()))
            .and(cp.offset.lt(next))
            .and(notIn(cp.streamId, exclude))
            .orderBy(next.minus(cp.offset).desc())
            .limit(1)
            .forUpdate();
    Record4<Long, Long, Integer, Long> r =
        skipLocked ? query.skipLocked().fetchOne() : query.fetchOne();
    return r == null ? null : new LockedCheckpoint(r.value1(), r.value2(), r.value3(), r.value4());
  }

  /**
   * Locks the handler's checkpoint of {@code streamId} again, {@code SKIP LOCKED}, if it is
   * unparked and still at {@code checkpoint}: for counting the failure of a delivery whose
   * transaction was rolled back. When that transaction was the one that started tracking the stream
   * (its row went with the rollback) and the expected checkpoint is 0, the stream is tracked again
   * here, as {@link #trackUntracked} does. Returns null when the row is held by another
   * transaction, parked or has moved. The resume time is not checked: the failed delivery was due.
   */
  public LockedCheckpoint relock(DSLContext dsl, long streamId, long checkpoint) {
    Field<Long> next = nextOffsetOf(cp.streamId);
    Record4<Long, Long, Integer, Long> r =
        dsl.select(cp.streamId, cp.offset, cp.failures, next)
            .from(cp.table)
            .where(guard(streamId, checkpoint))
            .and(cp.parkedAt.isNull())
            .forUpdate()
            .skipLocked()
            .fetchOne();
    if (r != null) {
      return new LockedCheckpoint(r.value1(), r.value2(), r.value3(), r.value4());
    }
    if (checkpoint != 0 || !tryTrackingLock(dsl, streamId)) {
      return null;
    }
    Record2<Long, Integer> inserted =
        dsl.insertInto(cp.table, cp.handlerKey, cp.streamId)
            .values(handlerKey, streamId)
            .onConflictDoNothing()
            .returningResult(cp.offset, cp.failures)
            .fetchOne();
    if (inserted == null) {
      return null; // tracked (and held, parked or moved on) by someone else meanwhile
    }
    Long nextOffset =
        dsl.select(streams.nextOffset)
            .from(streams.table)
            .where(streams.id.eq(streamId))
            .fetchOne(streams.nextOffset);
    return new LockedCheckpoint(
        streamId, inserted.value1(), inserted.value2(), nextOffset == null ? 0 : nextOffset);
  }

  private Field<Long> nextOffsetOf(Field<Long> streamId) {
    return field(select(streams.nextOffset).from(streams.table).where(streams.id.eq(streamId)));
  }

  /** Takes the lock a transaction holds while it starts tracking a stream, without waiting. */
  private boolean tryTrackingLock(DSLContext dsl, long streamId) {
    Boolean locked =
        dsl.select(
                function(
                    "pg_try_advisory_xact_lock",
                    SQLDataType.BOOLEAN,
                    val(trackingLockKey),
                    val(streamLockKey(streamId))))
            .fetchOne()
            .value1();
    return Boolean.TRUE.equals(locked);
  }

  /**
   * Up to {@code limit} committed events of the handler's types at or after the claim's checkpoint,
   * in offset order. The stream's type index answers first when the stream holds nothing relevant
   * past it.
   */
  public List<EventRows.Row> nextEvents(DSLContext dsl, LockedCheckpoint claim, int limit) {
    Long latest =
        dsl.select(max(streamTypes.latestOffset))
            .from(streamTypes.table)
            .where(streamTypes.streamId.eq(claim.streamId()))
            .and(streamTypes.type.eq(any(val(types))))
            .fetchOne()
            .value1();
    if (latest == null || latest < claim.checkpoint()) {
      return List.of();
    }
    return dsl.select(rows.columns())
        .from(events.table)
        .where(events.streamId.eq(claim.streamId()))
        .and(events.offset.between(claim.checkpoint(), latest))
        .and(events.type.eq(any(val(types))))
        .orderBy(events.offset)
        .limit(limit)
        .fetch(rows::toRow);
  }

  /** Sets a held checkpoint from {@code old} to {@code next} and resets its failures. */
  public void setOffset(DSLContext dsl, long streamId, long old, long next) {
    int n =
        dsl.update(cp.table)
            .set(cp.offset, next)
            .set(cp.failures, 0)
            .set(cp.updatedAt, Tables.clockTimestamp())
            .where(guard(streamId, old))
            .execute();
    expectOne(n, streamId, old);
  }

  /** Makes a held stream due again after {@code delay} with a new failure count. */
  public void postpone(
      DSLContext dsl, long streamId, long checkpoint, int failures, Duration delay) {
    int n =
        dsl.update(cp.table)
            .set(cp.failures, failures)
            .set(cp.resumeAt, DatabaseClock.afterOffset(delay))
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
