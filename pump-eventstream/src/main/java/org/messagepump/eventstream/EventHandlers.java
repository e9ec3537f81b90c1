package org.messagepump.eventstream;

import static org.jooq.impl.DSL.function;
import static org.jooq.impl.DSL.val;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Transactions;
import org.messagepump.eventstream.internal.CheckpointQueries;
import org.messagepump.eventstream.internal.Tables;
import org.messagepump.eventstream.internal.Tables.Checkpoints;
import org.messagepump.eventstream.internal.Tables.Streams;

/**
 * Operations on the handlers' checkpoints, each in its own transaction: lag per stream, parked
 * streams and resuming them, replaying a handler from offset 0, moving one checkpoint. Obtained
 * from {@link EventStore#handlers()}. Operations on a checkpoint that a delivery holds wait for it.
 */
public final class EventHandlers {

  private final DataSource dataSource;

  EventHandlers(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** Every handler key that has started reading at least one stream, sorted. */
  public List<String> handlerKeys() {
    return Transactions.inNew(
        dataSource,
        "listing handler keys",
        tx ->
            tx.dsl()
                .selectDistinct(Checkpoints.HANDLER_KEY)
                .from(Checkpoints.T)
                .orderBy(Checkpoints.HANDLER_KEY)
                .fetch(Record1::value1));
  }

  /**
   * The handler's checkpoint of every stream, by stream id; streams it has not started reading are
   * listed with offset 0 and {@code tracked = false}.
   */
  public List<Checkpoint> checkpoints(String handlerKey) {
    requireKey(handlerKey);
    return Transactions.inNew(
        dataSource,
        "reading the checkpoints of handler '" + handlerKey + "'",
        tx ->
            tx.dsl()
                .select(Streams.ID, Streams.NEXT_OFFSET)
                .select(checkpointColumns())
                .from(Streams.T)
                .leftJoin(Checkpoints.T)
                .on(Checkpoints.STREAM_ID.eq(Streams.ID))
                .and(Checkpoints.HANDLER_KEY.eq(handlerKey))
                .orderBy(Streams.ID)
                .fetch(r -> checkpoint(handlerKey, r)));
  }

  /** The handler's total lag: events at or after its checkpoints, over every stream. */
  public long lag(String handlerKey) {
    return checkpoints(handlerKey).stream().mapToLong(Checkpoint::lag).sum();
  }

  /** The streams parked for {@code handlerKey}, by stream id. */
  public List<Checkpoint> parked(String handlerKey) {
    requireKey(handlerKey);
    return parkedWhere(Checkpoints.HANDLER_KEY.eq(handlerKey));
  }

  /** The streams parked for any handler, by handler key and stream id. */
  public List<Checkpoint> parked() {
    return parkedWhere(Checkpoints.PARKED_AT.isNotNull());
  }

  private List<Checkpoint> parkedWhere(Condition condition) {
    return Transactions.inNew(
        dataSource,
        "listing parked streams",
        tx ->
            tx.dsl()
                .select(Streams.ID, Streams.NEXT_OFFSET)
                .select(checkpointColumns())
                .from(Checkpoints.T)
                .join(Streams.T)
                .on(Streams.ID.eq(Checkpoints.STREAM_ID))
                .where(condition)
                .and(Checkpoints.PARKED_AT.isNotNull())
                .orderBy(Checkpoints.HANDLER_KEY, Checkpoints.STREAM_ID)
                .fetch(r -> checkpoint(r.get(Checkpoints.HANDLER_KEY), r)));
  }

  /**
   * Resumes a parked stream for a handler: failures reset, due now, from the same checkpoint (the
   * event that failed comes first). Returns false when it was not parked.
   */
  public boolean resume(String handlerKey, long streamId) {
    requireKey(handlerKey);
    return resumeWhere(
            handlerKey,
            Checkpoints.HANDLER_KEY.eq(handlerKey).and(Checkpoints.STREAM_ID.eq(streamId)))
        == 1;
  }

  /** Resumes every stream parked for {@code handlerKey}; returns how many. */
  public int resumeAll(String handlerKey) {
    requireKey(handlerKey);
    return resumeWhere(handlerKey, Checkpoints.HANDLER_KEY.eq(handlerKey));
  }

  private int resumeWhere(String handlerKey, Condition condition) {
    return Transactions.inNew(
        dataSource,
        "resuming parked streams of handler '" + handlerKey + "'",
        tx ->
            tx.dsl()
                .update(Checkpoints.T)
                .setNull(Checkpoints.PARKED_AT)
                .setNull(Checkpoints.PARKED_REASON)
                .set(Checkpoints.FAILURES, 0)
                .set(Checkpoints.RESUME_AT, Tables.clockTimestamp())
                .set(Checkpoints.UPDATED_AT, Tables.clockTimestamp())
                .where(condition)
                .and(Checkpoints.PARKED_AT.isNotNull())
                .execute());
  }

  /**
   * Replays every stream for {@code handlerKey} from offset 0: checkpoints to 0, failures reset,
   * parked streams resumed. Returns how many checkpoints were reset.
   */
  public int reset(String handlerKey) {
    requireKey(handlerKey);
    return Transactions.inNew(
        dataSource,
        "resetting handler '" + handlerKey + "'",
        tx ->
            tx.dsl()
                .update(Checkpoints.T)
                .set(Checkpoints.OFFSET, 0L)
                .set(Checkpoints.FAILURES, 0)
                .setNull(Checkpoints.PARKED_AT)
                .setNull(Checkpoints.PARKED_REASON)
                .set(Checkpoints.RESUME_AT, Tables.clockTimestamp())
                .set(Checkpoints.UPDATED_AT, Tables.clockTimestamp())
                .where(Checkpoints.HANDLER_KEY.eq(handlerKey))
                .execute());
  }

  /**
   * Moves one checkpoint to {@code newOffset} (backwards replays, forwards skips) if it is at
   * {@code expectedOffset} (an untracked stream counts as 0). Failures are reset.
   *
   * @throws CheckpointConflictException when the checkpoint is elsewhere; nothing is changed
   * @throws IllegalArgumentException for a negative offset or an unknown stream
   */
  public void setCheckpoint(String handlerKey, long streamId, long expectedOffset, long newOffset) {
    requireKey(handlerKey);
    if (expectedOffset < 0 || newOffset < 0) {
      throw new IllegalArgumentException(
          "offsets must not be negative: expected " + expectedOffset + ", new " + newOffset);
    }
    Transactions.inNew(
        dataSource,
        "setting the checkpoint of handler '" + handlerKey + "' on stream " + streamId,
        tx -> {
          DSLContext dsl = tx.dsl();
          Long current = lockCheckpoint(dsl, handlerKey, streamId);
          if (current == null) {
            track(dsl, handlerKey, streamId);
            current = lockCheckpoint(dsl, handlerKey, streamId);
          }
          if (current != expectedOffset) {
            throw new CheckpointConflictException(handlerKey, streamId, expectedOffset, current);
          }
          return dsl.update(Checkpoints.T)
              .set(Checkpoints.OFFSET, newOffset)
              .set(Checkpoints.FAILURES, 0)
              .set(Checkpoints.UPDATED_AT, Tables.clockTimestamp())
              .where(Checkpoints.HANDLER_KEY.eq(handlerKey))
              .and(Checkpoints.STREAM_ID.eq(streamId))
              .execute();
        });
  }

  private static Long lockCheckpoint(DSLContext dsl, String handlerKey, long streamId) {
    Record1<Long> r =
        dsl.select(Checkpoints.OFFSET)
            .from(Checkpoints.T)
            .where(Checkpoints.HANDLER_KEY.eq(handlerKey))
            .and(Checkpoints.STREAM_ID.eq(streamId))
            .forUpdate()
            .fetchOne();
    return r == null ? null : r.value1();
  }

  private static void track(DSLContext dsl, String handlerKey, long streamId) {
    if (!dsl.fetchExists(dsl.selectOne().from(Streams.T).where(Streams.ID.eq(streamId)))) {
      throw new IllegalArgumentException("stream " + streamId + " does not exist");
    }
    // The same lock acquisition takes before it starts tracking a stream (see CheckpointQueries).
    dsl.select(
            function(
                "pg_advisory_xact_lock",
                SQLDataType.OTHER,
                val(CheckpointQueries.trackingLockKey(handlerKey)),
                val(CheckpointQueries.streamLockKey(streamId))))
        .execute();
    dsl.insertInto(Checkpoints.T, Checkpoints.HANDLER_KEY, Checkpoints.STREAM_ID)
        .values(handlerKey, streamId)
        .onConflictDoNothing()
        .execute();
  }

  private static List<org.jooq.Field<?>> checkpointColumns() {
    return List.of(
        Checkpoints.HANDLER_KEY,
        Checkpoints.OFFSET,
        Checkpoints.FAILURES,
        Checkpoints.RESUME_AT,
        Checkpoints.PARKED_AT,
        Checkpoints.PARKED_REASON);
  }

  private static Checkpoint checkpoint(String handlerKey, Record r) {
    boolean tracked = r.get(Checkpoints.HANDLER_KEY) != null;
    return new Checkpoint(
        handlerKey,
        r.get(Streams.ID),
        tracked ? r.get(Checkpoints.OFFSET) : 0,
        r.get(Streams.NEXT_OFFSET),
        tracked ? r.get(Checkpoints.FAILURES) : 0,
        instant(r.get(Checkpoints.RESUME_AT)),
        instant(r.get(Checkpoints.PARKED_AT)),
        r.get(Checkpoints.PARKED_REASON),
        tracked);
  }

  private static Instant instant(OffsetDateTime t) {
    // 'epoch' is the default of a never postponed checkpoint: report it as null.
    if (t == null || t.toEpochSecond() <= 0) {
      return null;
    }
    return t.toInstant();
  }

  private static void requireKey(String handlerKey) {
    if (handlerKey == null || handlerKey.isBlank()) {
      throw new IllegalArgumentException("handlerKey must not be blank");
    }
  }
}
