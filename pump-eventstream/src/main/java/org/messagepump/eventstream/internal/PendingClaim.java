package org.messagepump.eventstream.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.eventstream.internal.CheckpointQueries.LockedCheckpoint;

/**
 * Claims the handler's next pending stream, reads its next events and moves its checkpoint past
 * them, in one round trip (two when the walk goes round): a CTE locks the first pending, due,
 * unparked checkpoint row after the driver's cursor in turn order ({@code FOR UPDATE SKIP LOCKED};
 * when there is none after it, the same statement runs again from the start), a lateral subquery
 * reads up to {@code limit} events of the handler's types from its checkpoint, bounded by the
 * stream's type index, and an update of the locked row sets the checkpoint after the last of them
 * (the success bookkeeping up front; a run that ends early writes it back, see {@link StreamRun}).
 * A served row keeps its turn; the driver's cursor moves past it (see {@link
 * CheckpointQueries#setOffset}).
 *
 * <p>Written by hand and run through plain JDBC with a fixed text per limit (rendered once), like
 * the command claim: building and rendering a jOOQ query per poll, and a second round trip for the
 * events, were most of the gap to the baseline at batch size 1 (docs/performance-notes.md). The
 * names are quoted identifiers of a validated schema; every value is bound: the handler key (also
 * for the paused check), the excluded stream ids (an array, empty when none), the type names (an
 * array). Covered by every driver test (EventDriverIT, EventPumpIT, EventStreamsLoadIT,
 * EventSqlSafetyIT).
 */
public final class PendingClaim {

  /**
   * The rows a claim may take: the handler's pending (the generated column the ready index is
   * partial on), unparked, due rows, not among the excluded ids.
   */
  private static final String READY =
      " WHERE handler_key = ? AND pending AND parked_at IS NULL"
          + " AND resume_at <= clock_timestamp() AND stream_id <> ALL (?::bigint[])";

  /**
   * A claimed row with its events (empty when the stream holds none of the handler's types), or no
   * claim ({@code checkpoint} null); {@code turn}: the claimed row's turn (the driver's next
   * cursor), {@link Long#MIN_VALUE} when nothing was claimed; {@code stored}: the checkpoint the
   * row holds after the claim (past the last event read, or the claim's checkpoint when there was
   * none).
   */
  public record Claimed(
      LockedCheckpoint checkpoint, List<EventRows.Row> events, long turn, long stored) {}

  private final String handlerKey;
  private final String[] types;
  private final String cp;
  private final String events;
  private final String streamTypes;
  private final String notPaused;
  private final String pendingSql;
  private final Map<Integer, String> sqlByLimit = new ConcurrentHashMap<>();

  /** The claim of {@code handlerKey} reading {@code types} in the store of {@code tables}. */
  public PendingClaim(Tables tables, String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = types.toArray(new String[0]);
    this.cp = tables.quoted("handler_checkpoints");
    this.events = tables.quoted("events");
    this.streamTypes = tables.quoted("stream_types");
    // A paused handler claims nothing and has nothing pending, so its pump idles as on
    // an empty poll: an uncorrelated NOT EXISTS, one primary-key probe per statement, planned as a
    // one-time filter above everything else (nothing is scanned or locked when it fails). No
    // extra round trip. Rendered once, with one bind marker: the handler key.
    String notPausedCheck =
        DSL.using(SQLDialect.POSTGRES)
            .render(tables.pauses.notPaused(DSL.param("handlerKey", SQLDataType.CLOB)));
    this.notPaused = " WHERE " + notPausedCheck;
    // Whether anything is pending at all (held by another transaction or not): asked only when a
    // poll claimed nothing. An ordered LIMIT 1 on the ready index, not EXISTS: EXISTS was planned
    // as a sequential scan of all the handler's rows (12.7 ms at 200,000 streams).
    this.pendingSql =
        "SELECT true FROM " + cp + READY + " AND " + notPausedCheck + " ORDER BY turn LIMIT 1";
  }

  /** One range of the walk: the first ready row with its turn in the range, locked. */
  private String range(String turnBound) {
    return "SELECT stream_id, checkpoint_offset, failures, stream_end, turn FROM "
        + cp
        + READY
        + " AND "
        + turnBound
        + " ORDER BY turn LIMIT 1 FOR UPDATE SKIP LOCKED";
  }

  String sql(int limit) {
    return sqlByLimit.computeIfAbsent(
        limit,
        k ->
            // c, one step of the walk from the cursor: the first ready row after it. One range,
            // one bound: run() sends the same statement again from the start (a new lap) when
            // nothing is after the cursor. An ordered scan of the ready index that starts at the
            // bound: no sort, and no walk over rows the cursor has passed. The paused check is a
            // one-time filter above it (nothing is scanned or locked when it fails).
            //
            // Not both ranges of the walk (after the cursor, then from the start) as branches of
            // one UNION ALL: that saves a round trip per lap, but the second branch's nodes are
            // set up and shut down at every execution although it runs about once per lap, which
            // costs the server more per claim than the round trip (docs/performance-notes.md).
            //
            // e, the claimed stream's next events of the handler's types, in offset order.
            //
            // u, the success bookkeeping done up front, as the command queue and the balancer do
            // it: the checkpoint moves past the last event read, in this statement; it commits
            // with the handlers' writes, and whatever ends the run early (a failure, Busy, a
            // projection answering another offset) writes the checkpoint where it really is
            // before the commit (EventDriver, StreamRun). So a batch whose events are all handled
            // is BEGIN + this statement and COMMIT: no checkpoint statement of its own.
            //
            // Kept to few plan nodes: perf on the server showed executor start-up (initializing
            // each node and expression, at every execution of the prepared statement) as the
            // largest part of the claim's cost beyond the baseline's (docs/performance-notes.md).
            // No outer ORDER BY (the lateral scan returns the events in offset order; run()
            // checks), and "anything pending?" is a statement of its own, asked only when nothing
            // was claimed.
            "WITH c AS (SELECT * FROM ("
                + range("turn > ?")
                + ") AS a"
                + notPaused
                + "),"
                + " e AS (SELECT ev.* FROM c CROSS JOIN LATERAL (SELECT * FROM "
                + events
                + " AS x WHERE x.stream_id = c.stream_id"
                + " AND x.stream_offset >= c.checkpoint_offset"
                + " AND x.stream_offset <= (SELECT max(t.latest_offset) FROM "
                + streamTypes
                + " AS t WHERE t.stream_id = c.stream_id AND t.type = ANY (?::text[]))"
                + " AND x.type = ANY (?::text[])"
                + " ORDER BY x.stream_offset LIMIT "
                + limit // an int of the code (the pump's batch size), not data
                + ") AS ev),"
                + " u AS (UPDATE "
                + cp
                + " SET checkpoint_offset = (SELECT max(e.stream_offset) + 1 FROM e), failures = 0,"
                + " updated_at = clock_timestamp()"
                + " WHERE handler_key = ? AND stream_id = (SELECT c.stream_id FROM c)"
                + " AND EXISTS (SELECT 1 FROM e) RETURNING checkpoint_offset)"
                + " SELECT c.stream_id, c.checkpoint_offset, c.failures, c.stream_end, c.turn,"
                + " (SELECT u.checkpoint_offset FROM u),"
                + " e.message_id, e.stream_offset, e.type, e.correlation_id, e.causation_id,"
                + " e.headers::text, e.payload,"
                + " (extract(epoch FROM e.recorded_at) * 1000000)::bigint"
                + " FROM c LEFT JOIN e ON true");
  }

  /**
   * Whether the handler has a pending, due, unparked row not among {@code exclude}, held by another
   * transaction or not (false while the handler is paused).
   */
  public boolean anyPending(Connection c, Collection<Long> exclude) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(pendingSql)) {
      ps.setString(1, handlerKey);
      ps.setObject(2, exclude.toArray(new Long[0]));
      ps.setString(3, handlerKey);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /**
   * Claims and reads: the first ready row whose turn is after {@code cursor}, else (a new lap) the
   * first from the start, a second statement; the result's checkpoint is null when no ready row is
   * free. Its {@code turn} is the claimed row's; when nothing was claimed, {@link Long#MIN_VALUE}:
   * the walk went round, so the caller's next walk may start from the start (one statement for an
   * idle handler's poll, not two).
   */
  public Claimed run(Connection c, Collection<Long> exclude, long cursor, int limit)
      throws SQLException {
    Claimed claimed = step(c, exclude, cursor, limit);
    if (claimed.checkpoint() == null && cursor != Long.MIN_VALUE) {
      claimed = step(c, exclude, Long.MIN_VALUE, limit);
    }
    return claimed;
  }

  /** One statement of the walk: the first ready row after {@code cursor}, claimed and read. */
  private Claimed step(Connection c, Collection<Long> exclude, long cursor, int limit)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql(limit))) {
      // Arrays bound with setObject (pgjdbc encodes Long[] and String[] itself): createArrayOf
      // looks the element type up by name at every call, a visible cost per delivery.
      int i = 0;
      ps.setString(++i, handlerKey);
      ps.setObject(++i, exclude.toArray(new Long[0]));
      ps.setLong(++i, cursor);
      ps.setString(++i, handlerKey); // the paused check
      ps.setObject(++i, types);
      ps.setObject(++i, types);
      ps.setString(++i, handlerKey); // the checkpoint update
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
          }
          if (rs.getObject(7) != null) {
            EventRows.Row row = EventRows.toRow(rs, 7, claim.streamId());
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
      return new Claimed(claim, rows, turn, stored);
    }
  }
}
