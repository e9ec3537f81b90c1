package org.messagepump.eventstream.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

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
 * <p>Plain SQL: the names are quoted identifiers of a validated schema, every value is bound.
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

  private static final String COLUMNS =
      "r.handler_key, r.stream_id, r.next_offset, r.stream_key, r.checkpoint_offset, r.failures,"
          + " r.resume_at, r.parked_at, r.parked_reason, r.tracked";

  private final String horizonsSql;
  private final String horizonSql;
  private final String summarySql;
  private final String behindFirstSql;
  private final String behindAfterSql;
  private final String parkedFirstSql;
  private final String parkedAfterSql;
  private final String handlerKeysSql;

  /** The queries of the store in {@code tables}. */
  public LagQueries(EventTables tables) {
    String cp = tables.quoted("handler_checkpoints");
    String streams = tables.quoted("streams");
    String handlers = tables.quoted("handlers");
    String keys = tables.quoted("stream_keys");
    // The handler keys by a loose index scan of the checkpoints' primary key: one probe per key.
    String keyScan =
        "WITH RECURSIVE keys(handler_key) AS ((SELECT handler_key FROM "
            + cp
            + " ORDER BY handler_key LIMIT 1) UNION ALL SELECT (SELECT c.handler_key FROM "
            + cp
            + " AS c WHERE c.handler_key > keys.handler_key ORDER BY c.handler_key LIMIT 1)"
            + " FROM keys WHERE keys.handler_key IS NOT NULL) ";
    this.handlerKeysSql =
        keyScan + "SELECT handler_key FROM keys WHERE handler_key IS NOT NULL ORDER BY handler_key";
    this.horizonsSql =
        keyScan
            + "SELECT k.handler_key, coalesce(h.horizon, 0), coalesce(h.deferred, '{}')"
            + " FROM keys AS k LEFT JOIN "
            + handlers
            + " AS h ON h.handler_key = k.handler_key WHERE k.handler_key IS NOT NULL"
            + " ORDER BY k.handler_key";
    this.horizonSql =
        "SELECT coalesce(max(horizon), 0), coalesce(max(deferred), '{}') FROM "
            + handlers
            + " WHERE handler_key = ?";
    // The streams of one handler that may lag (see the class doc), with their figures. Every
    // value is bound (the handler key, its horizon and deferred streams): each branch of the
    // union is a range of one index. Each candidate then probes the streams' primary key: the
    // lateral subquery's OFFSET 0 keeps the planner from flattening it into a hash join that
    // reads every stream (400,000 streams cost a sequential scan of them on each read, while
    // the candidates are a few thousand index probes).
    String candidates =
        "SELECT c.stream_id FROM "
            + cp
            + " AS c WHERE c.handler_key = ? AND c.pending AND c.parked_at IS NULL"
            + " UNION SELECT c.stream_id FROM "
            + cp
            + " AS c WHERE c.handler_key = ? AND c.parked_at IS NOT NULL"
            + " UNION SELECT s.id FROM "
            + streams
            + " AS s WHERE s.changed_xid >= ?"
            + " UNION SELECT unnest(?::bigint[])";
    String rows =
        "SELECT ?::text AS handler_key, s.id AS stream_id, s.next_offset, sk.stream_key,"
            + " coalesce(c.checkpoint_offset, 0) AS checkpoint_offset,"
            + " coalesce(c.failures, 0) AS failures, c.resume_at, c.parked_at, c.parked_reason,"
            + " c.stream_id IS NOT NULL AS tracked,"
            + " greatest(0, s.next_offset - coalesce(c.checkpoint_offset, 0)) AS lag,"
            + " c.parked_at IS NOT NULL AS parked"
            + " FROM ("
            + candidates
            + ") AS x CROSS JOIN LATERAL (SELECT s.id, s.next_offset FROM "
            + streams
            + " AS s WHERE s.id = x.stream_id OFFSET 0) AS s LEFT JOIN "
            + cp
            + " AS c ON c.handler_key = ? AND c.stream_id = s.id LEFT JOIN "
            + keys
            + " AS sk ON sk.stream_id = s.id";
    String shown = "(r.lag > 0 OR r.parked OR r.failures > 0)";
    // The first unread event of each lagging stream: one probe of the (stream, offset) key each.
    this.summarySql =
        "SELECT count(*) FILTER (WHERE r.lag > 0), count(*) FILTER (WHERE r.parked),"
            + " coalesce(sum(r.lag), 0), coalesce(sum(r.failures), 0),"
            + " coalesce(extract(epoch from clock_timestamp() - min(e.recorded_at)), 0) FROM ("
            + rows
            + ") AS r LEFT JOIN "
            + tables.quoted("events")
            + " AS e ON r.lag > 0 AND e.stream_id = r.stream_id"
            + " AND e.stream_offset = r.checkpoint_offset";
    String behind = "SELECT " + COLUMNS + " FROM (" + rows + ") AS r WHERE " + shown;
    String behindOrder = " ORDER BY r.parked DESC, r.lag DESC, r.stream_id LIMIT ?";
    this.behindFirstSql = behind + behindOrder;
    // (parked, lag, -stream_id) descending is the order: parked first, largest lag, lowest id.
    this.behindAfterSql =
        behind + " AND (r.parked::int, r.lag, -r.stream_id) < (?, ?, ?)" + behindOrder;
    String parked =
        "SELECT "
            + COLUMNS
            + " FROM (SELECT c.handler_key, s.id AS stream_id, s.next_offset, sk.stream_key,"
            + " c.checkpoint_offset, c.failures, c.resume_at, c.parked_at, c.parked_reason,"
            + " true AS tracked, greatest(0, s.next_offset - c.checkpoint_offset) AS lag FROM "
            + cp
            + " AS c JOIN "
            + streams
            + " AS s ON s.id = c.stream_id LEFT JOIN "
            + keys
            + " AS sk ON sk.stream_id = s.id WHERE c.parked_at IS NOT NULL) AS r";
    String parkedOrder = " ORDER BY r.lag DESC, r.handler_key, r.stream_id LIMIT ?";
    this.parkedFirstSql = parked + parkedOrder;
    this.parkedAfterSql =
        parked
            + " WHERE r.lag < ? OR (r.lag = ? AND (r.handler_key, r.stream_id) > (?, ?))"
            + parkedOrder;
  }

  /** Every handler key with at least one checkpoint row, sorted. */
  public List<String> handlerKeys(Connection c) throws SQLException {
    List<String> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(handlerKeysSql);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  /** A handler's horizon and the streams its last refresh deferred. */
  private record Horizon(String handlerKey, long horizon, Object[] deferred) {}

  /**
   * Per handler key (sorted): lagging and parked streams, total lag and failures. One statement for
   * the keys and their horizons, then one per handler.
   */
  public List<Summary> summaries(Connection c) throws SQLException {
    List<Horizon> horizons = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(horizonsSql);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        horizons.add(
            new Horizon(rs.getString(1), rs.getLong(2), (Object[]) rs.getArray(3).getArray()));
      }
    }
    List<Summary> out = new ArrayList<>();
    for (Horizon h : horizons) {
      try (PreparedStatement ps = c.prepareStatement(summarySql)) {
        bindRows(ps, h);
        try (ResultSet rs = ps.executeQuery()) {
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
    }
    return out;
  }

  private Horizon horizon(Connection c, String handlerKey) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(horizonSql)) {
      ps.setString(1, handlerKey);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new Horizon(handlerKey, rs.getLong(1), (Object[]) rs.getArray(2).getArray());
      }
    }
  }

  /** Binds the six values of the rows of one handler; returns the next parameter's index. */
  private static int bindRows(PreparedStatement ps, Horizon h) throws SQLException {
    ps.setString(1, h.handlerKey());
    ps.setString(2, h.handlerKey());
    ps.setString(3, h.handlerKey());
    ps.setLong(4, h.horizon());
    ps.setArray(5, ps.getConnection().createArrayOf("bigint", h.deferred()));
    ps.setString(6, h.handlerKey());
    return 7;
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
        c.prepareStatement(afterLag == null ? behindFirstSql : behindAfterSql)) {
      int i = bindRows(ps, h);
      if (afterLag != null) {
        ps.setInt(i++, afterParked ? 1 : 0);
        ps.setLong(i++, afterLag);
        ps.setLong(i++, -afterStreamId);
      }
      ps.setInt(i, limit);
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
        c.prepareStatement(afterKey == null ? parkedFirstSql : parkedAfterSql)) {
      int i = 1;
      if (afterKey != null) {
        ps.setLong(i++, afterLag);
        ps.setLong(i++, afterLag);
        ps.setString(i++, afterKey);
        ps.setLong(i++, afterStreamId);
      }
      ps.setInt(i, limit);
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
