package org.messagepump.eventstream.internal;

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
import org.jooq.types.DayToSecond;
import org.messagepump.eventstream.StoredEvent;
import org.messagepump.eventstream.internal.Tables.Checkpoints;
import org.messagepump.eventstream.internal.Tables.Events;
import org.messagepump.eventstream.internal.Tables.StreamTypes;
import org.messagepump.eventstream.internal.Tables.Streams;

/**
 * The SQL of one handler's checkpoints: claiming a stream (tracking a new one or locking a tracked
 * one), finding the next event of the handler's types, and moving, postponing or parking the
 * checkpoint. Every statement after a claim is guarded by the claimed checkpoint offset.
 */
public final class CheckpointQueries {

  /** A checkpoint row this transaction holds, with the stream's committed next offset. */
  public record Claim(long streamId, long checkpoint, int failures, long nextOffset) {}

  /** Longest parked reason stored. */
  static final int MAX_REASON = 2000;

  private final String handlerKey;
  private final List<String> types;
  private final int trackingLockKey;

  /** Queries for one handler and the event types it wants. */
  public CheckpointQueries(String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = List.copyOf(types);
    this.trackingLockKey = trackingLockKey(handlerKey);
  }

  /** The first half of the advisory lock a transaction holds while it starts tracking a stream. */
  public static int trackingLockKey(String handlerKey) {
    return ("messagepump.eventstream.track:" + handlerKey).hashCode();
  }

  /** The advisory lock key of a handler with minimal concurrency. */
  public static long handlerLockKey(String handlerKey) {
    String s = "messagepump.eventstream.handler:" + handlerKey;
    int reversed = new StringBuilder(s).reverse().toString().hashCode();
    return ((long) s.hashCode() << 32) | (reversed & 0xffffffffL);
  }

  /** The second half of the tracking lock: the stream id folded into an int. */
  public static int streamLockKey(long streamId) {
    return (int) (streamId ^ (streamId >>> 32));
  }

  private Condition mine() {
    return Checkpoints.HANDLER_KEY.eq(handlerKey);
  }

  /**
   * Starts tracking a stream the handler does not track yet: inserts its checkpoint row (offset 0),
   * which this transaction then holds. Candidates that another transaction is starting to track are
   * skipped without waiting. Returns null when every stream is tracked or being tracked.
   */
  public Claim trackUntracked(DSLContext dsl, Collection<Long> exclude, int candidates) {
    List<Record2<Long, Long>> untracked =
        dsl.select(Streams.ID, Streams.NEXT_OFFSET)
            .from(Streams.T)
            .where(
                notExists(
                    selectOne()
                        .from(Checkpoints.T)
                        .where(mine())
                        .and(Checkpoints.STREAM_ID.eq(Streams.ID))))
            .and(exclude.isEmpty() ? noCondition() : Streams.ID.notIn(exclude))
            .orderBy(rand())
            .limit(candidates)
            .fetch();
    for (Record2<Long, Long> s : untracked) {
      long streamId = s.value1();
      Boolean locked =
          dsl.select(
                  function(
                      "pg_try_advisory_xact_lock",
                      SQLDataType.BOOLEAN,
                      val(trackingLockKey),
                      val(streamLockKey(streamId))))
              .fetchOne()
              .value1();
      if (!Boolean.TRUE.equals(locked)) {
        continue; // another transaction is starting to track it
      }
      Record2<Long, Integer> inserted =
          dsl.insertInto(Checkpoints.T, Checkpoints.HANDLER_KEY, Checkpoints.STREAM_ID)
              .values(handlerKey, streamId)
              .onConflictDoNothing()
              .returningResult(Checkpoints.OFFSET, Checkpoints.FAILURES)
              .fetchOne();
      if (inserted != null) {
        return new Claim(streamId, inserted.value1(), inserted.value2(), s.value2());
      }
    }
    return null;
  }

  /**
   * Locks the tracked, unparked, due checkpoint with the largest backlog, skipping rows other
   * transactions hold. Returns null when there is none.
   */
  public Claim lockTracked(DSLContext dsl, Collection<Long> exclude) {
    return lockTracked(dsl, exclude, true);
  }

  /**
   * As {@link #lockTracked(DSLContext, Collection)}, but waits for a row another transaction holds
   * (a delivery of this handler about to commit): used when nothing is free, under a lock timeout.
   */
  public Claim waitForTracked(DSLContext dsl, Collection<Long> exclude) {
    return lockTracked(dsl, exclude, false);
  }

  private Claim lockTracked(DSLContext dsl, Collection<Long> exclude, boolean skipLocked) {
    Field<Long> next =
        field(
            select(Streams.NEXT_OFFSET)
                .from(Streams.T)
                .where(Streams.ID.eq(Checkpoints.STREAM_ID)));
    var query =
        dsl.select(Checkpoints.STREAM_ID, Checkpoints.OFFSET, Checkpoints.FAILURES, next)
            .from(Checkpoints.T)
            .where(mine())
            .and(Checkpoints.PARKED_AT.isNull())
            .and(Checkpoints.RESUME_AT.le(Tables.clockTimestamp()))
            .and(Checkpoints.OFFSET.lt(next))
            .and(exclude.isEmpty() ? noCondition() : Checkpoints.STREAM_ID.notIn(exclude))
            .orderBy(next.minus(Checkpoints.OFFSET).desc())
            .limit(1)
            .forUpdate();
    Record4<Long, Long, Integer, Long> r =
        skipLocked ? query.skipLocked().fetchOne() : query.fetchOne();
    return r == null ? null : new Claim(r.value1(), r.value2(), r.value3(), r.value4());
  }

  /**
   * Up to {@code limit} committed events of the handler's types at or after the claim's checkpoint,
   * in offset order. The stream's type index answers first when the stream holds nothing relevant
   * past it.
   */
  public List<StoredEvent> nextEvents(DSLContext dsl, Claim claim, int limit) {
    Long latest =
        dsl.select(max(StreamTypes.LATEST_OFFSET))
            .from(StreamTypes.T)
            .where(StreamTypes.STREAM_ID.eq(claim.streamId()))
            .and(StreamTypes.TYPE.in(types))
            .fetchOne()
            .value1();
    if (latest == null || latest < claim.checkpoint()) {
      return List.of();
    }
    return dsl.select(EventRows.COLUMNS)
        .from(Events.T)
        .where(Events.STREAM_ID.eq(claim.streamId()))
        .and(Events.OFFSET.between(claim.checkpoint(), latest))
        .and(Events.TYPE.in(types))
        .orderBy(Events.OFFSET)
        .limit(limit)
        .fetch(EventRows::toEvent);
  }

  /** Sets a held checkpoint from {@code old} to {@code next} and resets its failures. */
  public void setOffset(DSLContext dsl, long streamId, long old, long next) {
    int n =
        dsl.update(Checkpoints.T)
            .set(Checkpoints.OFFSET, next)
            .set(Checkpoints.FAILURES, 0)
            .set(Checkpoints.UPDATED_AT, Tables.clockTimestamp())
            .where(guard(streamId, old))
            .execute();
    expectOne(n, streamId, old);
  }

  /** Makes a held stream due again after {@code delay} with a new failure count. */
  public void postpone(
      DSLContext dsl, long streamId, long checkpoint, int failures, Duration delay) {
    int n =
        dsl.update(Checkpoints.T)
            .set(Checkpoints.FAILURES, failures)
            .set(Checkpoints.RESUME_AT, Tables.clockTimestamp().plus(DayToSecond.valueOf(delay)))
            .set(Checkpoints.UPDATED_AT, Tables.clockTimestamp())
            .where(guard(streamId, checkpoint))
            .execute();
    expectOne(n, streamId, checkpoint);
  }

  /** Parks a held stream for this handler: it is not read again until resumed. */
  public void park(DSLContext dsl, long streamId, long checkpoint, int failures, String reason) {
    String r = reason == null ? "" : reason;
    int n =
        dsl.update(Checkpoints.T)
            .set(Checkpoints.FAILURES, failures)
            .set(Checkpoints.PARKED_AT, Tables.clockTimestamp())
            .set(
                Checkpoints.PARKED_REASON, r.length() > MAX_REASON ? r.substring(0, MAX_REASON) : r)
            .set(Checkpoints.UPDATED_AT, Tables.clockTimestamp())
            .where(guard(streamId, checkpoint))
            .execute();
    expectOne(n, streamId, checkpoint);
  }

  private Condition guard(long streamId, long checkpoint) {
    return mine().and(Checkpoints.STREAM_ID.eq(streamId)).and(Checkpoints.OFFSET.eq(checkpoint));
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
