package org.messagepump.eventstream;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.select;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Record1;
import org.messagepump.core.Inputs;
import org.messagepump.core.Transactions;
import org.messagepump.eventstream.internal.HandlerRegistry;
import org.messagepump.eventstream.internal.Tables;

/**
 * Operations on the handlers' checkpoints, each in its own transaction: lag per stream, parked
 * streams and resuming them, replaying a handler from offset 0, moving one checkpoint. Obtained
 * from {@link EventStore#handlers()}. Operations on a checkpoint that a delivery holds wait for it.
 *
 * <p>{@link #reset}, {@link #setCheckpoint}, {@link #resume} and {@link #resumeAll} are
 * linearizable with deliveries: each first takes the handler's row lock, which every transaction
 * creating a checkpoint row of the handler holds until it ends (including a delivery that created
 * the row of the stream it is handling), then updates the rows, waiting for any a delivery holds.
 * So they take effect after every delivery that overlapped them, and never miss a row.
 */
public final class EventHandlers {

  private final DataSource dataSource;
  private final Tables tables;
  private final Tables.Checkpoints cp;
  private final Tables.Streams streams;

  EventHandlers(DataSource dataSource, Tables tables) {
    this.dataSource = dataSource;
    this.tables = tables;
    this.cp = tables.checkpoints;
    this.streams = tables.streams;
  }

  /** Every handler key that has started reading at least one stream, sorted. */
  public List<String> handlerKeys() {
    return Transactions.inNew(
        dataSource,
        "listing handler keys",
        tx ->
            tx.dsl()
                .selectDistinct(cp.handlerKey)
                .from(cp.table)
                .orderBy(cp.handlerKey)
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
                .select(streams.id, streams.nextOffset)
                .select(checkpointColumns())
                .from(streams.table)
                .leftJoin(cp.table)
                .on(cp.streamId.eq(streams.id))
                .and(cp.handlerKey.eq(handlerKey))
                .orderBy(streams.id)
                .fetch(r -> checkpoint(handlerKey, r)));
  }

  /** The handler's total lag: events at or after its checkpoints, over every stream. */
  public long lag(String handlerKey) {
    return checkpoints(handlerKey).stream().mapToLong(Checkpoint::lag).sum();
  }

  /** The streams parked for {@code handlerKey}, by stream id. */
  public List<Checkpoint> parked(String handlerKey) {
    requireKey(handlerKey);
    return parkedWhere(cp.handlerKey.eq(handlerKey));
  }

  /** The streams parked for any handler, by handler key and stream id. */
  public List<Checkpoint> parked() {
    return parkedWhere(cp.parkedAt.isNotNull());
  }

  private List<Checkpoint> parkedWhere(Condition condition) {
    return Transactions.inNew(
        dataSource,
        "listing parked streams",
        tx ->
            tx.dsl()
                .select(streams.id, streams.nextOffset)
                .select(checkpointColumns())
                .from(cp.table)
                .join(streams.table)
                .on(streams.id.eq(cp.streamId))
                .where(condition)
                .and(cp.parkedAt.isNotNull())
                .orderBy(cp.handlerKey, cp.streamId)
                .fetch(r -> checkpoint(r.get(cp.handlerKey), r)));
  }

  /**
   * Resumes a parked stream for a handler: failures reset, due now, from the same checkpoint (the
   * event that failed comes first). Returns false when it was not parked.
   */
  public boolean resume(String handlerKey, long streamId) {
    requireKey(handlerKey);
    return resumeWhere(handlerKey, cp.handlerKey.eq(handlerKey).and(cp.streamId.eq(streamId))) == 1;
  }

  /** Resumes every stream parked for {@code handlerKey}; returns how many. */
  public int resumeAll(String handlerKey) {
    requireKey(handlerKey);
    return resumeWhere(handlerKey, cp.handlerKey.eq(handlerKey));
  }

  private int resumeWhere(String handlerKey, Condition condition) {
    return locked(
        handlerKey,
        "resuming parked streams of handler '" + handlerKey + "'",
        dsl ->
            dsl.update(cp.table)
                .setNull(cp.parkedAt)
                .setNull(cp.parkedReason)
                .set(cp.failures, 0)
                .set(cp.resumeAt, Tables.clockTimestamp())
                .set(cp.updatedAt, Tables.clockTimestamp())
                .where(condition)
                .and(cp.parkedAt.isNotNull())
                .execute());
  }

  /** Runs {@code work} in a new transaction holding the handler row's lock (see the class doc). */
  private <T> T locked(String handlerKey, String what, Function<DSLContext, T> work) {
    return Transactions.inNew(
        dataSource,
        what,
        tx -> {
          DSLContext dsl = tx.dsl();
          HandlerRegistry registry = new HandlerRegistry(tables, handlerKey);
          boolean placeholder = registry.lock(dsl);
          T result = work.apply(dsl);
          registry.unlock(dsl, placeholder);
          return result;
        });
  }

  /**
   * Replays every stream for {@code handlerKey} from offset 0: checkpoints to 0, failures reset,
   * parked streams resumed. Returns how many checkpoints were reset.
   */
  public int reset(String handlerKey) {
    requireKey(handlerKey);
    return locked(
        handlerKey,
        "resetting handler '" + handlerKey + "'",
        dsl ->
            dsl.update(cp.table)
                .set(cp.offset, 0L)
                .set(cp.turn, Tables.nextTurn())
                .set(cp.failures, 0)
                .setNull(cp.parkedAt)
                .setNull(cp.parkedReason)
                .set(cp.resumeAt, Tables.clockTimestamp())
                .set(cp.updatedAt, Tables.clockTimestamp())
                .where(cp.handlerKey.eq(handlerKey))
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
    locked(
        handlerKey,
        "setting the checkpoint of handler '" + handlerKey + "' on stream " + streamId,
        dsl -> {
          Long current = lockCheckpoint(dsl, handlerKey, streamId);
          if (current == null) {
            track(dsl, handlerKey, streamId);
            current = lockCheckpoint(dsl, handlerKey, streamId);
          }
          if (current != expectedOffset) {
            throw new CheckpointConflictException(handlerKey, streamId, expectedOffset, current);
          }
          return dsl.update(cp.table)
              .set(cp.offset, newOffset)
              .set(cp.failures, 0)
              .set(cp.turn, Tables.nextTurn())
              .set(
                  cp.streamEnd,
                  field(
                      select(streams.nextOffset)
                          .from(streams.table)
                          .where(streams.id.eq(cp.streamId))))
              .set(cp.updatedAt, Tables.clockTimestamp())
              .where(cp.handlerKey.eq(handlerKey))
              .and(cp.streamId.eq(streamId))
              .execute();
        });
  }

  private Long lockCheckpoint(DSLContext dsl, String handlerKey, long streamId) {
    Record1<Long> r =
        dsl.select(cp.offset)
            .from(cp.table)
            .where(cp.handlerKey.eq(handlerKey))
            .and(cp.streamId.eq(streamId))
            .forUpdate()
            .fetchOne();
    return r == null ? null : r.value1();
  }

  private void track(DSLContext dsl, String handlerKey, long streamId) {
    if (!dsl.fetchExists(dsl.selectOne().from(streams.table).where(streams.id.eq(streamId)))) {
      throw new IllegalArgumentException("stream " + streamId + " does not exist");
    }
    // This transaction holds the handler row: no delivery is creating rows of the handler.
    dsl.insertInto(cp.table, cp.handlerKey, cp.streamId)
        .values(handlerKey, streamId)
        .onConflictDoNothing()
        .execute();
  }

  private List<org.jooq.Field<?>> checkpointColumns() {
    return List.of(
        cp.handlerKey, cp.offset, cp.failures, cp.resumeAt, cp.parkedAt, cp.parkedReason);
  }

  private Checkpoint checkpoint(String handlerKey, Record r) {
    boolean tracked = r.get(cp.handlerKey) != null;
    return new Checkpoint(
        handlerKey,
        r.get(streams.id),
        tracked ? r.get(cp.offset) : 0,
        r.get(streams.nextOffset),
        tracked ? r.get(cp.failures) : 0,
        instant(r.get(cp.resumeAt)),
        instant(r.get(cp.parkedAt)),
        r.get(cp.parkedReason),
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
    Inputs.key("handlerKey", handlerKey);
  }
}
