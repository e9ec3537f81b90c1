package org.messagepump.eventstream.internal;

import static org.messagepump.eventstream.internal.EventTables.CHANGED_XID;
import static org.messagepump.eventstream.internal.EventTables.CHECKPOINT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.DEFERRED;
import static org.messagepump.eventstream.internal.EventTables.FAILURES;
import static org.messagepump.eventstream.internal.EventTables.HANDLER_KEY;
import static org.messagepump.eventstream.internal.EventTables.HORIZON;
import static org.messagepump.eventstream.internal.EventTables.ID;
import static org.messagepump.eventstream.internal.EventTables.NEXT_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.PARKED_AT;
import static org.messagepump.eventstream.internal.EventTables.PARKED_REASON;
import static org.messagepump.eventstream.internal.EventTables.PENDING;
import static org.messagepump.eventstream.internal.EventTables.RESUME_AT;
import static org.messagepump.eventstream.internal.EventTables.STREAM_ID;
import static org.messagepump.eventstream.internal.EventTables.STREAM_KEY;
import static org.messagepump.eventstream.internal.EventTables.STREAM_OFFSET;
import static org.messagepump.eventstream.internal.EventTables.column;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.DatePart;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.spi.StatementCache;

/**
 * The operators' reads of lag whose cost grows with the streams that may lag, not with every stream
 * times every handler.
 *
 * <p>A handler's stream may lag only when its checkpoint row is pending (behind the stream's end as
 * the row knows it: the pollers' partial index {@code handler_checkpoints_ready_idx}), parked
 * ({@code handler_checkpoints_parked_idx}), or when the stream changed since the handler's horizon
 * or was deferred by its last refresh ({@code streams_changed_xid_idx}): a refresh brings every
 * other row's end up to date, so a row that is none of these is caught up. These reads take the
 * union of those sets and compute the lag of each member against the stream's committed end.
 *
 * <p>Built by jOOQ over {@link EventTables} and rendered once per store, run through JDBC with
 * every value bound.
 */
public final class LagQueries {

  /** One row of {@link #behind} and {@link #parked}. */
  public record Row(
      String handlerKey,
      long streamId,
      long nextOffset,
      String streamKey,
      long offset,
      int failures,
      OffsetDateTime resumeAt,
      OffsetDateTime parkedAt,
      String parkedReason,
      boolean tracked) {}

  /**
   * One row of {@link #summaries}; {@code oldestSeconds} is the age of the oldest event the handler
   * has not read (its first unread event of each lagging stream, the oldest of them; 0 when it lags
   * on none), by the database clock.
   */
  public record Summary(
      String handlerKey,
      long laggingStreams,
      long parkedStreams,
      long lag,
      long failures,
      double oldestSeconds) {}

  private static final Param<String> HANDLER =
      StatementCache.parameter("handler", SQLDataType.CLOB);
  private static final Param<Integer> LIMIT =
      StatementCache.parameter("limit", SQLDataType.INTEGER);
  private static final Param<Long> LAG = StatementCache.parameter("lag", SQLDataType.BIGINT);
  private static final Param<Long> STREAM = StatementCache.parameter("stream", SQLDataType.BIGINT);

  // The columns of the derived table r (see rows and parked) the reads return, in Row's order.
  private static final Field<String> R_HANDLER_KEY = r(HANDLER_KEY);
  private static final Field<Long> R_STREAM_ID = r(STREAM_ID);
  private static final Field<Long> R_NEXT_OFFSET = r(NEXT_OFFSET);
  private static final Field<Long> R_CHECKPOINT_OFFSET = r(CHECKPOINT_OFFSET);
  private static final Field<Integer> R_FAILURES = r(FAILURES);
  private static final Field<Boolean> R_TRACKED =
      DSL.field(DSL.name("r", "tracked"), SQLDataType.BOOLEAN);
  private static final Field<Long> R_LAG = DSL.field(DSL.name("r", "lag"), SQLDataType.BIGINT);
  private static final Field<Boolean> R_PARKED =
      DSL.field(DSL.name("r", "parked"), SQLDataType.BOOLEAN);
  private static final List<Field<?>> COLUMNS =
      List.of(
          R_HANDLER_KEY,
          R_STREAM_ID,
          R_NEXT_OFFSET,
          r(STREAM_KEY),
          R_CHECKPOINT_OFFSET,
          R_FAILURES,
          r(RESUME_AT),
          r(PARKED_AT),
          r(PARKED_REASON),
          R_TRACKED);

  private final StatementCache.Statement horizonsSql;
  private final StatementCache.Statement horizonSql;
  private final StatementCache.Statement summarySql;
  private final StatementCache.Statement behindFirstSql;
  private final StatementCache.Statement behindAfterSql;
  private final StatementCache.Statement parkedFirstSql;
  private final StatementCache.Statement parkedAfterSql;
  private final StatementCache.Statement handlerKeysSql;

  /**
   * The queries of the store in {@code tables}: built by jOOQ and rendered once ({@link
   * StatementCache#render}), run through JDBC with every value bound.
   */
  public LagQueries(EventTables tables) {
    Table<Record> cp = tables.checkpoints;
    Table<?> keys = DSL.table(DSL.name("keys"));
    Field<String> keysKey = column(keys, HANDLER_KEY);
    this.handlerKeysSql =
        StatementCache.render(
            dsl ->
                dsl.withRecursive(keyScan(dsl, cp))
                    .select(keysKey)
                    .from(keys)
                    .where(keysKey.isNotNull())
                    .orderBy(keysKey));
    Table<?> k = keys.as("k");
    Table<?> h = tables.handlers.as("h");
    this.horizonsSql =
        StatementCache.render(
            dsl ->
                dsl.withRecursive(keyScan(dsl, cp))
                    .select(
                        column(k, HANDLER_KEY),
                        DSL.coalesce(column(h, HORIZON), DSL.inline(0L)),
                        column(h, DEFERRED)) // null without a handler row: read as empty
                    .from(k)
                    .leftJoin(h)
                    .on(column(h, HANDLER_KEY).eq(column(k, HANDLER_KEY)))
                    .where(column(k, HANDLER_KEY).isNotNull())
                    .orderBy(column(k, HANDLER_KEY)));
    this.horizonSql =
        StatementCache.render(
            dsl ->
                dsl.select(DSL.coalesce(DSL.max(HORIZON), DSL.inline(0L)), DSL.max(DEFERRED))
                    .from(tables.handlers)
                    .where(HANDLER_KEY.eq(HANDLER)),
            "handler");
    // The first unread event of each lagging stream: one probe of the (stream, offset) key each;
    // the oldest one's age in seconds is the difference of the two epochs.
    this.summarySql =
        StatementCache.render(
            dsl -> {
              Table<?> e = tables.events.as("e");
              return dsl.select(
                      DSL.count().filterWhere(R_LAG.gt(DSL.inline(0L))),
                      DSL.count().filterWhere(DSL.condition(R_PARKED)),
                      DSL.coalesce(DSL.sum(R_LAG), DSL.inline(BigDecimal.ZERO)),
                      DSL.coalesce(DSL.sum(R_FAILURES), DSL.inline(BigDecimal.ZERO)),
                      DSL.coalesce(
                          DSL.extract(EventTables.clockTimestamp(), DatePart.EPOCH)
                              .minus(
                                  DSL.extract(
                                      DSL.min(column(e, EventTables.RECORDED_AT)), DatePart.EPOCH)),
                          DSL.inline(BigDecimal.ZERO)))
                  .from(rows(dsl, tables))
                  .leftJoin(e)
                  .on(R_LAG.gt(DSL.inline(0L)))
                  .and(column(e, STREAM_ID).eq(R_STREAM_ID))
                  .and(column(e, STREAM_OFFSET).eq(R_CHECKPOINT_OFFSET));
            },
            ROWS);
    // (parked, lag, -stream_id) descending is the order: parked first, largest lag, lowest id.
    this.behindFirstSql =
        StatementCache.render(dsl -> behind(dsl, tables, DSL.noCondition()), BEHIND_FIRST);
    this.behindAfterSql =
        StatementCache.render(
            dsl ->
                behind(
                    dsl,
                    tables,
                    DSL.row(R_PARKED.cast(SQLDataType.INTEGER), R_LAG, R_STREAM_ID.neg())
                        .lt(
                            StatementCache.parameter("parked", SQLDataType.INTEGER),
                            LAG,
                            StatementCache.parameter("negatedStream", SQLDataType.BIGINT))),
            BEHIND_AFTER);
    this.parkedFirstSql =
        StatementCache.render(dsl -> parked(dsl, tables, DSL.noCondition()), "limit");
    this.parkedAfterSql =
        StatementCache.render(
            dsl ->
                parked(
                    dsl,
                    tables,
                    R_LAG
                        .lt(LAG)
                        .or(
                            R_LAG
                                .eq(LAG)
                                .and(DSL.row(R_HANDLER_KEY, R_STREAM_ID).gt(HANDLER, STREAM)))),
            "lag",
            "handler",
            "stream",
            "limit");
  }

  /** The parameters of {@link #rows}, in the order {@link #bindRows} gives them. */
  private static final String[] ROWS = {"handler", "horizon", "deferred"};

  private static final String[] BEHIND_FIRST = {"handler", "horizon", "deferred", "limit"};

  private static final String[] BEHIND_AFTER = {
    "handler", "horizon", "deferred", "parked", "lag", "negatedStream", "limit"
  };

  /** {@code column} of the derived table {@code r}. */
  private static <T> Field<T> r(Field<T> column) {
    return column(DSL.table(DSL.name("r")), column);
  }

  /**
   * The handler keys by a loose index scan of the checkpoints' primary key, one probe per key: the
   * recursive CTE {@code keys}, its last row null.
   */
  private static CommonTableExpression<?> keyScan(DSLContext dsl, Table<Record> cp) {
    Table<?> c = cp.as("c");
    Table<?> keys = DSL.table(DSL.name("keys"));
    return DSL.name("keys")
        .fields(HANDLER_KEY.getName())
        .as(
            dsl.select(HANDLER_KEY)
                .from(cp)
                .orderBy(HANDLER_KEY)
                .limit(DSL.inline(1))
                .unionAll(
                    dsl.select(
                            DSL.field(
                                dsl.select(column(c, HANDLER_KEY))
                                    .from(c)
                                    .where(column(c, HANDLER_KEY).gt(column(keys, HANDLER_KEY)))
                                    .orderBy(column(c, HANDLER_KEY))
                                    .limit(DSL.inline(1))))
                        .from(keys)
                        .where(column(keys, HANDLER_KEY).isNotNull())));
  }

  /**
   * The streams of one handler that may lag (see the class doc), with their figures, as the derived
   * table {@code r}. Every value is bound (the handler key, its horizon and deferred streams): each
   * branch of the union is a range of one index. Each candidate then probes the streams' primary
   * key: the lateral subquery's OFFSET 0 keeps the planner from flattening it into a hash join that
   * reads every stream (400,000 streams cost a sequential scan of them on each read, while the
   * candidates are a few thousand index probes).
   */
  private static Table<?> rows(DSLContext dsl, EventTables tables) {
    Table<?> c = tables.checkpoints.as("c");
    Table<?> s = tables.streams.as("s");
    Table<?> sk = tables.streamKeys.as("sk");
    Table<?> x =
        dsl.select(column(c, STREAM_ID))
            .from(c)
            .where(column(c, HANDLER_KEY).eq(HANDLER))
            .and(DSL.condition(column(c, PENDING)))
            .and(column(c, PARKED_AT).isNull())
            .union(
                dsl.select(column(c, STREAM_ID))
                    .from(c)
                    .where(column(c, HANDLER_KEY).eq(HANDLER))
                    .and(column(c, PARKED_AT).isNotNull()))
            .union(
                dsl.select(column(s, ID))
                    .from(s)
                    .where(
                        column(s, CHANGED_XID)
                            .ge(StatementCache.parameter("horizon", SQLDataType.BIGINT))))
            .union(
                dsl.select(
                    DSL.function(
                        "unnest",
                        SQLDataType.BIGINT,
                        StatementCache.parameter("deferred", SQLDataType.BIGINT.array()))))
            .asTable("x");
    Table<?> probe =
        DSL.lateral(
            dsl.select(column(s, ID), column(s, NEXT_OFFSET))
                .from(s)
                .where(column(s, ID).eq(column(x, STREAM_ID)))
                .offset(DSL.inline(0))
                .asTable("s"));
    Field<Long> offset = DSL.coalesce(column(c, CHECKPOINT_OFFSET), DSL.inline(0L));
    return dsl.select(
            HANDLER.as(HANDLER_KEY.getName()),
            column(s, ID).as(STREAM_ID.getName()),
            column(s, NEXT_OFFSET),
            column(sk, STREAM_KEY),
            offset.as(CHECKPOINT_OFFSET.getName()),
            DSL.coalesce(column(c, FAILURES), DSL.inline(0)).as(FAILURES.getName()),
            column(c, RESUME_AT),
            column(c, PARKED_AT),
            column(c, PARKED_REASON),
            DSL.field(column(c, STREAM_ID).isNotNull()).as(R_TRACKED.getName()),
            DSL.greatest(DSL.inline(0L), column(s, NEXT_OFFSET).minus(offset)).as(R_LAG.getName()),
            DSL.field(column(c, PARKED_AT).isNotNull()).as(R_PARKED.getName()))
        .from(x)
        .crossJoin(probe)
        .leftJoin(c)
        .on(column(c, HANDLER_KEY).eq(HANDLER))
        .and(column(c, STREAM_ID).eq(column(s, ID)))
        .leftJoin(sk)
        .on(column(sk, STREAM_ID).eq(column(s, ID)))
        .asTable("r");
  }

  /** The shown rows of one handler after {@code after}, in page order. */
  private static Query behind(DSLContext dsl, EventTables tables, Condition after) {
    return dsl.select(COLUMNS)
        .from(rows(dsl, tables))
        .where(
            R_LAG.gt(DSL.inline(0L)).or(DSL.condition(R_PARKED)).or(R_FAILURES.gt(DSL.inline(0))))
        .and(after)
        .orderBy(R_PARKED.desc(), R_LAG.desc(), R_STREAM_ID)
        .limit(LIMIT);
  }

  /** The parked rows of every handler after {@code after}, in page order. */
  private static Query parked(DSLContext dsl, EventTables tables, Condition after) {
    Table<?> c = tables.checkpoints.as("c");
    Table<?> s = tables.streams.as("s");
    Table<?> sk = tables.streamKeys.as("sk");
    Table<?> r =
        dsl.select(
                column(c, HANDLER_KEY),
                column(s, ID).as(STREAM_ID.getName()),
                column(s, NEXT_OFFSET),
                column(sk, STREAM_KEY),
                column(c, CHECKPOINT_OFFSET),
                column(c, FAILURES),
                column(c, RESUME_AT),
                column(c, PARKED_AT),
                column(c, PARKED_REASON),
                DSL.inline(true).as(R_TRACKED.getName()),
                DSL.greatest(
                        DSL.inline(0L), column(s, NEXT_OFFSET).minus(column(c, CHECKPOINT_OFFSET)))
                    .as(R_LAG.getName()))
            .from(c)
            .join(s)
            .on(column(s, ID).eq(column(c, STREAM_ID)))
            .leftJoin(sk)
            .on(column(sk, STREAM_ID).eq(column(s, ID)))
            .where(column(c, PARKED_AT).isNotNull())
            .asTable("r");
    return dsl.select(COLUMNS)
        .from(r)
        .where(after)
        .orderBy(R_LAG.desc(), R_HANDLER_KEY, R_STREAM_ID)
        .limit(LIMIT);
  }

  /** Every handler key with at least one checkpoint row, sorted. */
  public List<String> handlerKeys(Connection c) throws SQLException {
    List<String> out = new ArrayList<>();
    try (PreparedStatement ps = handlerKeysSql.prepare(c);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  /** A handler's horizon and the streams its last refresh deferred. */
  private record Horizon(String handlerKey, long horizon, Long[] deferred) {

    /** The values of the parameters {@link #ROWS}. */
    Object[] values(Object... more) {
      Object[] values = new Object[3 + more.length];
      values[0] = handlerKey;
      values[1] = horizon;
      values[2] = deferred;
      System.arraycopy(more, 0, values, 3, more.length);
      return values;
    }
  }

  /** The bigint array in column {@code i}, empty when null (no handler row, or none deferred). */
  private static Long[] longs(ResultSet rs, int i) throws SQLException {
    java.sql.Array a = rs.getArray(i);
    return a == null ? new Long[0] : (Long[]) a.getArray();
  }

  /**
   * Per handler key (sorted): lagging and parked streams, total lag and failures. One statement for
   * the keys and their horizons, then one per handler.
   */
  public List<Summary> summaries(Connection c) throws SQLException {
    List<Horizon> horizons = new ArrayList<>();
    try (PreparedStatement ps = horizonsSql.prepare(c);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        horizons.add(new Horizon(rs.getString(1), rs.getLong(2), longs(rs, 3)));
      }
    }
    List<Summary> out = new ArrayList<>();
    for (Horizon h : horizons) {
      try (PreparedStatement ps = summarySql.prepare(c, h.values());
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        out.add(
            new Summary(
                h.handlerKey(),
                rs.getLong(1),
                rs.getLong(2),
                rs.getLong(3),
                rs.getLong(4),
                Math.max(0, rs.getDouble(5))));
      }
    }
    return out;
  }

  private Horizon horizon(Connection c, String handlerKey) throws SQLException {
    try (PreparedStatement ps = horizonSql.prepare(c, handlerKey);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return new Horizon(handlerKey, rs.getLong(1), longs(rs, 2));
    }
  }

  /**
   * Up to {@code limit} streams of {@code handlerKey} that lag, fail or are parked: parked first,
   * then the largest lag, then by stream id; after {@code (parked, lag, streamId)} when {@code
   * afterLag} is not null.
   */
  public List<Row> behind(
      Connection c,
      String handlerKey,
      boolean afterParked,
      Long afterLag,
      long afterStreamId,
      int limit)
      throws SQLException {
    Horizon h = horizon(c, handlerKey);
    try (PreparedStatement ps =
        afterLag == null
            ? behindFirstSql.prepare(c, h.values(limit))
            : behindAfterSql.prepare(
                c, h.values(afterParked ? 1 : 0, afterLag, -afterStreamId, limit))) {
      return rows(ps);
    }
  }

  /**
   * Up to {@code limit} parked streams of every handler: the largest lag first, then by handler key
   * and stream id; after {@code (lag, handlerKey, streamId)} when {@code afterKey} is not null.
   */
  public List<Row> parked(
      Connection c, Long afterLag, String afterKey, long afterStreamId, int limit)
      throws SQLException {
    try (PreparedStatement ps =
        afterKey == null
            ? parkedFirstSql.prepare(c, limit)
            : parkedAfterSql.prepare(c, afterLag, afterKey, afterStreamId, limit)) {
      return rows(ps);
    }
  }

  private static List<Row> rows(PreparedStatement ps) throws SQLException {
    List<Row> out = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(
            new Row(
                rs.getString(1),
                rs.getLong(2),
                rs.getLong(3),
                rs.getString(4),
                rs.getLong(5),
                rs.getInt(6),
                rs.getObject(7, OffsetDateTime.class),
                rs.getObject(8, OffsetDateTime.class),
                rs.getString(9),
                rs.getBoolean(10)));
      }
    }
    return out;
  }
}
