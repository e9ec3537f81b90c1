package org.messagepump.eventstream.internal;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.function;
import static org.jooq.impl.DSL.select;
import static org.jooq.impl.DSL.val;
import static org.messagepump.eventstream.internal.EventTables.CHECKPOINT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.FAILURES;
import static org.messagepump.eventstream.internal.EventTables.HANDLER_KEY;
import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.NEXT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.PARKED_AT;
import static org.messagepump.eventstream.internal.EventTables.PARKED_REASON;
import static org.messagepump.eventstream.internal.EventTables.RESUME_AT;
import static org.messagepump.eventstream.internal.EventTables.STREAM_END;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;
import static org.messagepump.eventstream.internal.EventTables.TURN;
import static org.messagepump.eventstream.internal.EventTables.UPDATED_AT;
import static org.messagepump.eventstream.internal.EventTables.column;

import java.util.function.Function;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.Table;
import org.jooq.impl.SQLDataType;

/**
 * The operations that change a handler's checkpoints (replay from 0, move one checkpoint, resume
 * parked streams), in a transaction someone else commits: the public API's own transaction, or the
 * caller's.
 *
 * <p>Which locks a delivery holds, and so what an operation waits for: a delivery holds the
 * checkpoint row of its stream ({@code FOR UPDATE}, taken {@code SKIP LOCKED} by the claim) until
 * its transaction ends; a delivery whose acquisition registered the handler or refreshed its rows
 * also holds the handler row ({@code FOR UPDATE SKIP LOCKED}) and, when it registered, the
 * registration advisory lock. Every statement that creates a checkpoint row runs under the handler
 * row's lock. An operation takes, waiting and in this order, the registration lock, the handler
 * row, and then the checkpoint rows it changes (an {@code UPDATE}, which waits for a row a delivery
 * holds and then applies to the row as that delivery left it). Holding them until its transaction
 * ends, it has waited for every delivery in flight on those rows and for every transaction creating
 * a row of the handler, and until then no delivery claims those rows (the claim skips them) and no
 * row of the handler is created (refreshes skip the handler row).
 *
 * <p>No deadlock with acquisition: acquisition never waits for the handler row or the registration
 * lock (it skips or tries), and it waits for one checkpoint row at most (when every pending stream
 * is held), under a lock timeout, and only while it shares the handler row ({@code FOR KEY SHARE
 * SKIP LOCKED}, see {@code CheckpointQueries.waitForPending}): an operation then waits for that
 * wait to end before it locks any checkpoint row, and while an operation holds the handler row no
 * acquisition waits. An operation takes the handler row before any checkpoint row of the handler,
 * so two operations on one handler queue on the handler row.
 *
 * <p>The statements rely on READ COMMITTED (each sees what was committed before it started, so the
 * rows made by the transactions it waited for): a transaction with a snapshot of its own
 * (REPEATABLE READ, SERIALIZABLE) would miss them, and is refused before anything is locked.
 */
public final class CheckpointOperations {

  private static final String READ_COMMITTED = "read committed";

  private final EventTables tables;
  private final Table<Record> cp;
  private final Table<Record> streams;

  /** The operations on the checkpoints of the store in {@code tables}. */
  public CheckpointOperations(EventTables tables) {
    this.tables = tables;
    this.cp = tables.checkpoints;
    this.streams = tables.streams;
  }

  /**
   * Replays every stream for {@code handlerKey} from offset 0: checkpoints to 0 (a new turn),
   * failures reset, parked streams resumed, due now. Returns how many rows were reset.
   */
  public int reset(DSLContext dsl, String handlerKey) {
    return locked(
        dsl,
        handlerKey,
        d ->
            d.update(cp)
                .set(CHECKPOINT_OFFSET, 0L)
                .set(TURN, EventTables.nextTurn())
                .set(FAILURES, 0)
                .setNull(PARKED_AT)
                .setNull(PARKED_REASON)
                .set(RESUME_AT, EventTables.clockTimestamp())
                .set(UPDATED_AT, EventTables.clockTimestamp())
                .where(HANDLER_KEY.eq(handlerKey))
                .execute());
  }

  /**
   * Resumes the handler's parked streams ({@code streamId} null: every one): failures reset, due
   * now, from the same checkpoint. Returns how many.
   */
  public int resume(DSLContext dsl, String handlerKey, Long streamId) {
    Condition which = HANDLER_KEY.eq(handlerKey);
    if (streamId != null) {
      which = which.and(STREAM_ID.eq(streamId));
    }
    Condition condition = which;
    return locked(
        dsl,
        handlerKey,
        d ->
            d.update(cp)
                .setNull(PARKED_AT)
                .setNull(PARKED_REASON)
                .set(FAILURES, 0)
                .set(RESUME_AT, EventTables.clockTimestamp())
                .set(UPDATED_AT, EventTables.clockTimestamp())
                .where(condition)
                .and(PARKED_AT.isNotNull())
                .execute());
  }

  /** True when stream {@code streamId} exists (committed, or created in this transaction). */
  public boolean streamExists(DSLContext dsl, long streamId) {
    return dsl.fetchExists(dsl.selectOne().from(streams).where(ID.eq(streamId)));
  }

  /**
   * Moves the handler's checkpoint of an existing stream to {@code newOffset} if it is at {@code
   * expectedOffset} (an untracked stream counts as 0; its row is created), failures reset. Returns
   * the offset it found: when that is not {@code expectedOffset}, nothing was written.
   */
  public long setCheckpoint(
      DSLContext dsl, String handlerKey, long streamId, long expectedOffset, long newOffset) {
    return locked(
        dsl,
        handlerKey,
        d -> {
          Record1<Long> row =
              d.select(CHECKPOINT_OFFSET)
                  .from(cp)
                  .where(HANDLER_KEY.eq(handlerKey))
                  .and(STREAM_ID.eq(streamId))
                  .forUpdate()
                  .fetchOne();
          long current = row == null ? 0 : row.value1();
          if (current != expectedOffset) {
            return current;
          }
          if (row == null) {
            // This transaction holds the handler row: no delivery is creating rows of the handler.
            d.insertInto(cp, HANDLER_KEY, STREAM_ID)
                .values(handlerKey, streamId)
                .onConflictDoNothing()
                .execute();
          }
          d.update(cp)
              .set(CHECKPOINT_OFFSET, newOffset)
              .set(FAILURES, 0)
              .set(TURN, EventTables.nextTurn())
              .set(
                  STREAM_END,
                  field(
                      select(column(streams, NEXT_OFFSET))
                          .from(streams)
                          .where(column(streams, ID).eq(column(cp, STREAM_ID)))))
              .set(UPDATED_AT, EventTables.clockTimestamp())
              .where(HANDLER_KEY.eq(handlerKey))
              .and(STREAM_ID.eq(streamId))
              .execute();
          return current;
        });
  }

  /**
   * Runs {@code work} holding the handler's lock (see the class doc) in the transaction of {@code
   * dsl}; the lock is held until that transaction ends. A placeholder handler row made for the lock
   * is removed again before returning, so a handler that has never run still registers at its own
   * start position.
   */
  private <T> T locked(DSLContext dsl, String handlerKey, Function<DSLContext, T> work) {
    requireReadCommitted(dsl);
    boolean placeholder = HandlerRegistry.lock(dsl, tables, handlerKey);
    T result = work.apply(dsl);
    HandlerRegistry.unlock(dsl, tables, handlerKey, placeholder);
    return result;
  }

  private static void requireReadCommitted(DSLContext dsl) {
    String isolation =
        dsl.select(function("current_setting", SQLDataType.VARCHAR, val("transaction_isolation")))
            .fetchOne()
            .value1();
    if (!READ_COMMITTED.equals(isolation)) {
      throw new IllegalArgumentException(
          "the transaction must be READ COMMITTED for a checkpoint operation, not " + isolation);
    }
  }
}
