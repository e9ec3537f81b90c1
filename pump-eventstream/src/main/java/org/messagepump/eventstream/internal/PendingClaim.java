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
import org.messagepump.eventstream.internal.CheckpointQueries.LockedCheckpoint;

/**
 * Claims the handler's next pending stream and reads its next events in one round trip: a CTE locks
 * the first pending, due, unparked checkpoint row in turn order ({@code FOR UPDATE SKIP LOCKED}),
 * and a lateral subquery reads up to {@code limit} events of the handler's types from its
 * checkpoint, bounded by the stream's type index.
 *
 * <p>Written by hand and run through plain JDBC with a fixed text per limit (rendered once), like
 * the command claim: building and rendering a jOOQ query per poll, and a second round trip for the
 * events, were most of the gap to the baseline at batch size 1 (docs/benchmarks.md, issue 14). The
 * names are quoted identifiers of a validated schema; every value is bound: the handler key (also
 * for the paused check), the excluded stream ids (an array, empty when none), the type names (an
 * array). Covered by every driver test (EventDriverIT, EventPumpIT, EventStreamsLoadIT,
 * EventSqlSafetyIT).
 */
public final class PendingClaim {

  /**
   * A claimed row with its events (empty when the stream holds none of the handler's types), or no
   * claim ({@code checkpoint} null); {@code anyPending}: whether a pending, due, unparked row (not
   * excluded) existed at all, held by another transaction or not.
   */
  public record Claimed(
      LockedCheckpoint checkpoint, List<EventRows.Row> events, boolean anyPending) {}

  private final String handlerKey;
  private final String[] types;
  private final String cp;
  private final String events;
  private final String streamTypes;
  private final String notPaused;
  private final Map<Integer, String> sqlByLimit = new ConcurrentHashMap<>();

  /** The claim of {@code handlerKey} reading {@code types} in the store of {@code tables}. */
  public PendingClaim(Tables tables, String handlerKey, Collection<String> types) {
    this.handlerKey = handlerKey;
    this.types = types.toArray(new String[0]);
    this.cp = tables.quoted("handler_checkpoints");
    this.events = tables.quoted("events");
    this.streamTypes = tables.quoted("stream_types");
    // A paused handler (issue 18) claims nothing and has nothing pending, so its pump idles as on
    // an empty poll: an uncorrelated NOT EXISTS, planned as a one-time filter (an InitPlan): one
    // primary-key probe per statement, whatever the handler's backlog. No extra round trip.
    this.notPaused =
        " AND NOT EXISTS (SELECT 1 FROM "
            + tables.quoted("paused_handlers")
            + " AS ph WHERE ph.handler_key = ?)";
  }

  String sql(int limit) {
    return sqlByLimit.computeIfAbsent(
        limit,
        k ->
            "WITH c AS (SELECT stream_id, checkpoint_offset, failures, stream_end FROM "
                + cp
                + " WHERE handler_key = ? AND checkpoint_offset < stream_end AND parked_at IS NULL"
                + " AND resume_at <= clock_timestamp() AND stream_id <> ALL (?::bigint[])"
                + notPaused
                + " ORDER BY turn LIMIT 1 FOR UPDATE SKIP LOCKED)"
                + " SELECT c.stream_id, c.checkpoint_offset, c.failures, c.stream_end,"
                + " e.message_id, e.stream_offset, e.type, e.correlation_id, e.causation_id,"
                + " e.headers::text, e.payload,"
                + " (extract(epoch FROM e.recorded_at) * 1000000)::bigint,"
                // Whether anything was pending at all is only asked when nothing was claimed: an
                // uncorrelated sub-select (an InitPlan), run on first use, so not on a claim.
                + " CASE WHEN c.stream_id IS NOT NULL THEN true ELSE EXISTS (SELECT 1 FROM "
                + cp
                + " WHERE handler_key = ? AND checkpoint_offset < stream_end AND parked_at IS NULL"
                + " AND resume_at <= clock_timestamp() AND stream_id <> ALL (?::bigint[])"
                + notPaused
                + ") END AS any_pending"
                + " FROM (SELECT 1) AS p"
                + " LEFT JOIN c ON true LEFT JOIN LATERAL (SELECT * FROM "
                + events
                + " AS ev WHERE ev.stream_id = c.stream_id"
                + " AND ev.stream_offset >= c.checkpoint_offset"
                + " AND ev.stream_offset <= (SELECT max(t.latest_offset) FROM "
                + streamTypes
                + " AS t WHERE t.stream_id = c.stream_id AND t.type = ANY (?::text[]))"
                + " AND ev.type = ANY (?::text[])"
                + " ORDER BY ev.stream_offset LIMIT "
                + limit // an int of the code (the pump's batch size), not data
                + ") AS e ON c.stream_id IS NOT NULL ORDER BY e.stream_offset");
  }

  /** Claims and reads; the result's checkpoint is null when no pending row is free. */
  public Claimed run(Connection c, Collection<Long> exclude, int limit) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql(limit))) {
      // Arrays bound with setObject (pgjdbc encodes Long[] and String[] itself): createArrayOf
      // looks the element type up by name at every call, a visible cost per delivery.
      Long[] excluded = exclude.toArray(new Long[0]);
      ps.setString(1, handlerKey);
      ps.setObject(2, excluded);
      ps.setString(3, handlerKey);
      ps.setString(4, handlerKey);
      ps.setObject(5, excluded);
      ps.setString(6, handlerKey);
      ps.setObject(7, types);
      ps.setObject(8, types);
      LockedCheckpoint claim = null;
      boolean anyPending = false;
      List<EventRows.Row> rows = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          anyPending = rs.getBoolean(13);
          if (rs.getObject(1) == null) {
            break; // nothing claimed: the one row says whether anything was pending
          }
          if (claim == null) {
            claim = new LockedCheckpoint(rs.getLong(1), rs.getLong(2), rs.getInt(3), rs.getLong(4));
          }
          if (rs.getObject(5) != null) {
            rows.add(EventRows.toRow(rs, 5, claim.streamId()));
          }
        }
      }
      return new Claimed(claim, rows, anyPending || claim != null);
    }
  }
}
