package org.messagepump.eventstream.internal;

import static org.messagepump.eventstream.internal.EventTables.CHECKPOINT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.CLAIMED_BY;
import static org.messagepump.eventstream.internal.EventTables.CLAIMED_US;
import static org.messagepump.eventstream.internal.EventTables.FAILURES;
import static org.messagepump.eventstream.internal.EventTables.HANDLER_KEY;
import static org.messagepump.eventstream.internal.EventTables.LATEST_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.PARKED_AT;
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
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Limits;
import org.messagepump.core.spi.DatabaseClock;
import org.messagepump.core.spi.StatementCache;
import org.messagepump.eventstream.internal.CheckpointQueries.LockedCheckpoint;

/**
 * Claims the handler's next pending stream, reads its next events and moves its checkpoint past
 * them, in one round trip (two when the walk goes round): a CTE locks the first pending, due,
 * unparked checkpoint row after the driver's cursor in turn order ({@code FOR UPDATE SKIP LOCKED};
 * when there is none after it, the same statement runs again from the start), a lateral subquery
 * reads up to {@code limit} events of the handler's types from its checkpoint, bounded by the
 * stream's type index, and an update of the locked row sets the checkpoint after the last of them
 * and marks the row with the claim's driver and time (the success bookkeeping up front; a run that
 * ends early writes it back, see {@link StreamRun}). A served row keeps its turn; the driver's
 * cursor moves past it (see {@link CheckpointQueries#setOffset}).
 *
 * <p>Built by jOOQ once per limit, rendered once through a {@link StatementCache} and run through
 * plain JDBC: building and rendering a query per poll, and a second round trip for the events, were
 * most of the gap to the baseline at batch size 1 (docs/performance-notes.md). Every value is
 * bound: the handler key (also for the paused check and the update), the excluded stream ids (an
 * array, empty when none), the cursor, the type names (an array), the driver's mark and the latest
 * mark it knew of; the limit is an integer of the code. Covered by every driver test
 * (EventDriverIT, EventPumpIT, EventStreamsLoadIT, EventSqlSafetyIT).
 */
public final class PendingClaim {

  private static final Param<String> HANDLER =
      StatementCache.parameter("handler", SQLDataType.CLOB);
  private static final Param<Long[]> EXCLUDE =
      StatementCache.parameter("exclude", SQLDataType.BIGINT.array());
  private static final Param<Long> CURSOR = StatementCache.parameter("cursor", SQLDataType.BIGINT);
  private static final Param<String[]> TYPES =
      StatementCache.parameter("types", SQLDataType.CLOB.array());
  private static final Param<Long> CLAIMER =
      StatementCache.parameter("claimer", SQLDataType.BIGINT);
  private static final Param<Long> SINCE = StatementCache.parameter("since", SQLDataType.BIGINT);

  /**
   * A claimed row with its events (empty when the stream holds none of the handler's types), or no
   * claim ({@code checkpoint} null); {@code turn}: the claimed row's turn (the driver's next
   * cursor), {@link Long#MIN_VALUE} when nothing was claimed; {@code stored}: the checkpoint the
   * row holds after the claim (past the last event read, or the claim's checkpoint when there was
   * none); {@code overtaken}: another claim of this driver took the same row after this one read
   * the cursor, and was served (see {@link Recent}): the caller gives the row back ({@link
   * CheckpointQueries#giveBack}) instead of serving it twice in a row.
   */
  public record Claimed(
      LockedCheckpoint checkpoint,
      List<EventRows.Row> events,
      long turn,
      long stored,
      boolean overtaken) {

    Claimed asOvertaken() {
      return new Claimed(checkpoint, events, turn, stored, true);
    }
  }

  private final String handlerKey;
  private final String[] types;
  private final Sql sql;

  /**
   * This driver in the marks its claims leave on the rows they serve ({@code claimed_by}): a random
   * number, so that a restarted process, or another driver of the handler, never passes for it.
   */
  private final long claimer = new java.security.SecureRandom().nextLong();

  /**
   * The latest mark ({@code claimed_us}, the database clock when the claim moved the checkpoint) of
   * a claim of this driver whose statement has returned. A claim skips the rows this driver marked
   * later than the value it read with the cursor: rows that another worker claimed after that read
   * (see {@link Cursor}), served a moment ago.
   */
  private final AtomicLong latestMark = new AtomicLong(Long.MIN_VALUE);

  /** This driver's place in the walk, shared by the pump's workers: see {@link Cursor}. */
  private final AtomicReference<Cursor> cursor = new AtomicReference<>(Cursor.START);

  /**
   * A driver's place in its round-robin walk: the lap, and the turn of the row claimed last in it
   * ({@link Long#MIN_VALUE}: the lap starts from the start). The next claim takes the first ready
   * row after it, so the pump's workers take consecutive rows. Concurrent claims merge by {@link
   * #later}: a worker whose claim is behind another's (an earlier lap, or an earlier turn in the
   * same lap) leaves the cursor where it is. Set back to an earlier turn, the next claim would take
   * again a row served since, still pending, and serve its stream twice in one lap, ahead of every
   * stream waiting behind it (a tenth of the deliveries, with 4 workers on 2 cores).
   *
   * <p>A claim reads the cursor before its statement runs; when another worker claimed a row after
   * that read and its delivery committed (releasing the row) before the statement ran, the
   * statement could take the same row again, served a moment ago. The statement skips the rows its
   * driver marked after the latest mark known when the cursor was read ({@link #latestMark}); a
   * claim that still takes such a row (marked by a claim that returned after another, later one) is
   * {@link Claimed#overtaken() overtaken}: see {@link Recent}. The marks took overtaken claims from
   * 2% of the claims to 0.03% with 4 workers on 2 cores, each one a claim, a give-back and another
   * claim.
   */
  record Cursor(long lap, long turn) {
    static final Cursor START = new Cursor(0, Long.MIN_VALUE);

    static Cursor later(Cursor a, Cursor b) {
      if (a.lap != b.lap) {
        return a.lap > b.lap ? a : b;
      }
      return a.turn >= b.turn ? a : b;
    }
  }

  /**
   * The last {@value #RECENT} claims of this driver, the {@code n}-th at {@code n % RECENT}: a
   * claim that finds its row's turn among the claims made since it read the cursor is overtaken.
   * (The cursor alone cannot tell: a claim running beside this one passes the row this one holds,
   * as it passes any held row, and moves the cursor beyond it.) A claim overtaken by more than
   * {@value #RECENT} others, its entries overwritten, is served.
   */
  private record Recent(long n, long turn) {}

  private static final int RECENT = 256;
  private final AtomicLong claimCount = new AtomicLong();
  private final AtomicReferenceArray<Recent> recent = new AtomicReferenceArray<>(RECENT);

  /** The claim of {@code handlerKey} reading {@code types} in the store of {@code tables}. */
  public PendingClaim(EventTables tables, String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = types.toArray(new String[0]);
    this.sql = tables.statements(Sql.class, Sql::new);
  }

  /**
   * The statements of a schema's claims, rendered once per schema ({@link EventTables#statements})
   * and shared by its drivers: whether anything is pending, and the claim per limit (at most one
   * per batch size a pump may ask for).
   */
  private static final class Sql {
    private final EventTables tables;
    private final StatementCache.Statement pending;
    private final StatementCache<Integer> claims = new StatementCache<>(Limits.MAX_BATCH_SIZE);

    Sql(EventTables tables) {
      this.tables = tables;
      // Whether anything is pending at all (held by another transaction or not): asked only when a
      // poll claimed nothing. An ordered LIMIT 1 on the ready index, not EXISTS: EXISTS was planned
      // as a sequential scan of all the handler's rows (12.7 ms at 200,000 streams).
      this.pending =
          StatementCache.render(
              dsl ->
                  dsl.select(DSL.inline(true))
                      .from(tables.checkpoints)
                      .where(ready())
                      .and(notPaused(tables))
                      .orderBy(TURN)
                      .limit(DSL.inline(1)),
              "handler",
              "exclude");
    }

    /** Every limit from 1 to this one has its claim statement rendered in {@link #claims}. */
    private volatile int renderedUpTo;

    /**
     * The claim statement reading up to {@code limit} events. A batch claims with the room it has
     * left, any limit up to the batch size, so the first claim of a limit also renders every
     * smaller one's (at most {@link Limits#MAX_BATCH_SIZE}). Rendered one by one as they came, a
     * limit first seen late was a cache miss in the JIT-compiled claim, a branch the compiled code
     * had never taken: the JVM dropped that code and compiled the claim again (JFR: 0.4 s of one
     * compiler thread, inside a timed {@code events.catchup.batch} of the bench).
     */
    StatementCache.Statement claim(int limit) {
      if (limit > renderedUpTo) {
        renderUpTo(limit);
      }
      return statement(limit);
    }

    private synchronized void renderUpTo(int limit) {
      for (int l = renderedUpTo + 1; l <= limit; l++) {
        statement(l);
      }
      renderedUpTo = Math.max(renderedUpTo, limit);
    }

    private StatementCache.Statement statement(int limit) {
      return claims.statement(
          limit,
          dsl -> PendingClaim.claim(tables, dsl, limit),
          "handler",
          "exclude",
          "cursor",
          "types",
          "claimer",
          "since");
    }
  }

  /**
   * The rows a claim may take: the handler's pending (the generated column the ready index is
   * partial on), unparked, due rows, not among the excluded ids.
   */
  static Condition ready() {
    return HANDLER_KEY
        .eq(HANDLER)
        .and(DSL.condition(PENDING))
        .and(PARKED_AT.isNull())
        .and(RESUME_AT.le(EventTables.clockTimestamp()))
        .and(STREAM_ID.ne(DSL.all(EXCLUDE)));
  }

  /**
   * A paused handler claims nothing and has nothing pending, so its pump idles as on an empty poll:
   * an uncorrelated NOT EXISTS, one primary-key probe per statement, planned as a one-time filter
   * above everything else (nothing is scanned or locked when it fails). No extra round trip.
   */
  private static Condition notPaused(EventTables tables) {
    return tables.pauses.notPaused(HANDLER);
  }

  /** The claim statement reading up to {@code limit} events. */
  StatementCache.Statement sql(int limit) {
    return sql.claim(limit);
  }

  private static Query claim(EventTables tables, DSLContext dsl, int limit) {
    // c, one step of the walk from the cursor: the first ready row after it, locked. One range,
    // one bound: run() sends the same statement again from the start (a new lap) when nothing is
    // after the cursor. An ordered scan of the ready index that starts at the bound: no sort, and
    // no walk over rows the cursor has passed. The paused check is a one-time filter above it
    // (nothing is scanned or locked when it fails).
    //
    // Not both ranges of the walk (after the cursor, then from the start) as branches of one UNION
    // ALL: that saves a round trip per lap, but the second branch's nodes are set up and shut down
    // at every execution although it runs about once per lap, which costs the server more per
    // claim than the round trip (docs/performance-notes.md).
    Table<?> a =
        dsl.select(STREAM_ID, CHECKPOINT_OFFSET, FAILURES, STREAM_END, TURN)
            .from(tables.checkpoints)
            .where(ready())
            .and(TURN.gt(CURSOR))
            // Not served by this driver since the claim read its cursor (see latestMark).
            .and(CLAIMED_BY.isDistinctFrom(CLAIMER).or(CLAIMED_US.le(SINCE)))
            .orderBy(TURN)
            .limit(DSL.inline(1))
            .forUpdate()
            .skipLocked()
            .asTable("a");
    CommonTableExpression<?> c =
        DSL.name("c").as(dsl.select(DSL.asterisk()).from(a).where(notPaused(tables)));
    Table<?> cRef = DSL.table(DSL.name("c"));
    Field<Long> cStream = column(cRef, STREAM_ID);
    // e, the claimed stream's next events of the handler's types, in offset order.
    Table<?> x = tables.events.as("x");
    Table<?> t = tables.streamTypes.as("t");
    Field<Long> latest =
        DSL.field(
            dsl.select(DSL.max(column(t, LATEST_OFFSET)))
                .from(t)
                .where(column(t, STREAM_ID).eq(cStream))
                .and(column(t, TYPE).eq(DSL.any(TYPES))));
    Table<?> ev =
        DSL.lateral(
            dsl.select(DSL.asterisk())
                .from(x)
                .where(column(x, STREAM_ID).eq(cStream))
                .and(column(x, STREAM_OFFSET).ge(column(cRef, CHECKPOINT_OFFSET)))
                .and(column(x, STREAM_OFFSET).le(latest))
                .and(column(x, TYPE).eq(DSL.any(TYPES)))
                .orderBy(column(x, STREAM_OFFSET))
                .limit(DSL.inline(limit)) // an int of the code (the pump's batch size), not data
                .asTable("ev"));
    CommonTableExpression<?> e =
        DSL.name("e").as(dsl.select(DSL.table(DSL.name("ev")).asterisk()).from(cRef).crossJoin(ev));
    Table<?> eRef = DSL.table(DSL.name("e"));
    // u, the success bookkeeping done up front, as the command queue and the balancer do it: the
    // checkpoint moves past the last event read, in this statement; it commits with the handlers'
    // writes, and whatever ends the run early (a failure, Busy, a projection answering another
    // offset) writes the checkpoint where it really is before the commit (EventDriver, StreamRun).
    // So a batch whose events are all handled is BEGIN + this statement and COMMIT: no checkpoint
    // statement of its own.
    CommonTableExpression<?> u =
        DSL.name("u")
            .as(
                dsl.update(tables.checkpoints)
                    .set(
                        CHECKPOINT_OFFSET,
                        DSL.field(
                            dsl.select(DSL.max(column(eRef, STREAM_OFFSET)).plus(DSL.inline(1L)))
                                .from(eRef)))
                    .set(FAILURES, DSL.inline(0))
                    .set(UPDATED_AT, EventTables.clockTimestamp())
                    .set(CLAIMED_BY, CLAIMER)
                    .set(CLAIMED_US, DatabaseClock.nowMicros())
                    .where(HANDLER_KEY.eq(HANDLER))
                    .and(STREAM_ID.eq(DSL.field(dsl.select(cStream).from(cRef))))
                    .and(DSL.exists(dsl.selectOne().from(eRef)))
                    .returningResult(CHECKPOINT_OFFSET, CLAIMED_US));
    Table<?> uRef = DSL.table(DSL.name("u"));
    // Kept to few plan nodes: perf on the server showed executor start-up (initializing each node
    // and expression, at every execution of the prepared statement) as the largest part of the
    // claim's cost beyond the baseline's (docs/performance-notes.md). No outer ORDER BY (the
    // lateral scan returns the events in offset order; run() checks), and "anything pending?" is a
    // statement of its own, asked only when nothing was claimed.
    List<Field<?>> columns =
        new ArrayList<>(
            List.of(
                cStream,
                column(cRef, CHECKPOINT_OFFSET),
                column(cRef, FAILURES),
                column(cRef, STREAM_END),
                column(cRef, TURN),
                DSL.field(dsl.select(column(uRef, CHECKPOINT_OFFSET)).from(uRef)),
                DSL.field(dsl.select(column(uRef, CLAIMED_US)).from(uRef))));
    columns.addAll(EventRows.jdbcColumns(eRef));
    return dsl.with(c)
        .with(e)
        .with(u)
        .select(columns)
        .from(cRef)
        .leftJoin(eRef)
        .on(DSL.trueCondition());
  }

  /**
   * Whether the handler has a pending, due, unparked row not among {@code exclude}, held by another
   * transaction or not (false while the handler is paused).
   */
  public boolean anyPending(Connection c, Collection<Long> exclude) throws SQLException {
    try (PreparedStatement ps = sql.pending.prepare(c, handlerKey, exclude.toArray(new Long[0]));
        ResultSet rs = ps.executeQuery()) {
      return rs.next();
    }
  }

  /**
   * Claims and reads the next row of the walk: the first ready row whose turn is after this
   * driver's cursor, else (a new lap) the first from the start, a second statement; the result's
   * checkpoint is null when no ready row is free, and the next walk starts from the start (one
   * statement for an idle handler's poll, not two). The cursor moves to the claimed row (see {@link
   * Cursor}).
   */
  public Claimed run(Connection c, Collection<Long> exclude, int limit) throws SQLException {
    long since = latestMark.get(); // before the cursor, as seen
    long seen = claimCount.get(); // before the cursor: a claim counted later moved it later
    Cursor at = cursor.get();
    Claimed claimed = step(c, exclude, at.turn(), since, limit);
    Cursor reached;
    if (claimed.checkpoint() != null) {
      reached = new Cursor(at.lap(), claimed.turn());
    } else {
      if (at.turn() != Long.MIN_VALUE) {
        claimed = step(c, exclude, Long.MIN_VALUE, since, limit);
      }
      if (claimed.checkpoint() == null) {
        // Nothing free: the next walk starts from the start, unless another claim moved the
        // cursor meanwhile (its rows may not have been visible to this one, as at a registration).
        cursor.compareAndSet(at, new Cursor(at.lap() + 1, Long.MIN_VALUE));
        return claimed;
      }
      reached = new Cursor(at.lap() + 1, claimed.turn());
    }
    if (claimedSince(seen, claimed.turn())) {
      return claimed.asOvertaken();
    }
    long n = claimCount.incrementAndGet();
    recent.set((int) (n % RECENT), new Recent(n, claimed.turn()));
    cursor.accumulateAndGet(reached, Cursor::later);
    return claimed;
  }

  /**
   * Whether a claim counted after {@code seen} took the row of {@code turn}. A claim counted but
   * not yet recorded still holds its row, so it cannot be the one this claim took again.
   */
  private boolean claimedSince(long seen, long turn) {
    long now = claimCount.get();
    for (long n = Math.max(seen + 1, now - RECENT + 1); n <= now; n++) {
      Recent r = recent.get((int) (n % RECENT));
      if (r != null && r.n() == n && r.turn() == turn) {
        return true;
      }
    }
    return false;
  }

  /**
   * One statement of the walk: the first ready row after {@code cursor} that this driver has not
   * marked after {@code since}, claimed and read.
   */
  private Claimed step(Connection c, Collection<Long> exclude, long cursor, long since, int limit)
      throws SQLException {
    try (PreparedStatement ps =
        sql(limit)
            .prepare(c, handlerKey, exclude.toArray(new Long[0]), cursor, types, claimer, since)) {
      LockedCheckpoint claim = null;
      long turn = Long.MIN_VALUE;
      long stored = -1;
      boolean ordered = true;
      List<EventRows.Row> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (claim == null) {
            claim = new LockedCheckpoint(rs.getLong(1), rs.getLong(2), rs.getInt(3), rs.getLong(4));
            turn = rs.getLong(5);
            stored = rs.getLong(6);
            if (rs.wasNull()) {
              stored = claim.checkpoint();
            }
            long mark = rs.getLong(7);
            if (!rs.wasNull()) {
              // Every claim's, overtaken or not: a row marked later than latestMark is skipped.
              latestMark.accumulateAndGet(mark, Math::max);
            }
          }
          if (rs.getObject(8) != null) {
            EventRows.Row row = EventRows.toRow(rs, 8, claim.streamId());
            ordered &= rows.isEmpty() || rows.get(rows.size() - 1).offset() < row.offset();
            rows.add(row);
          }
        }
      }
      if (!ordered) {
        // The plan keeps the lateral scan's order; should it not, the events are still handled in
        // offset order.
        rows.sort(java.util.Comparator.comparingLong(EventRows.Row::offset));
      }
      if (claim != null && !rows.isEmpty()) {
        long last = rows.get(rows.size() - 1).offset() + 1;
        if (stored != last) {
          // The update and the read disagree: not seen, and nothing to guess from.
          throw new SQLException(
              "event claim of stream "
                  + claim.streamId()
                  + ": the checkpoint was moved to "
                  + stored
                  + " but the last event read is at offset "
                  + (last - 1));
        }
      }
      return new Claimed(claim, rows, turn, stored, false);
    }
  }
}
