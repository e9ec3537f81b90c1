package org.messagepump.commands.internal;

import java.time.Instant;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.QueryPart;
import org.jooq.Record;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The SQL of one pending command found by message id or idempotency key: read it, cancel it, move
 * its due time. Each is one statement with every value bound (jOOQ plain-SQL templates: the table
 * names are the queue's quoted names, {@code {n}} parts are bind values).
 *
 * <p>A write never waits behind a handler. It locks the row with {@code FOR UPDATE SKIP LOCKED}, so
 * a row a transactional pump holds (its claim deleted it in the handling transaction, not yet
 * committed) is skipped, and the same clause's condition leaves out a row whose lease has not
 * expired (lease mode). The statement also counts the row as its snapshot sees it: present but not
 * written means held; absent means not found.
 */
public final class PendingQueries {

  private PendingQueries() {}

  /** The command found by message id. */
  public static QueryPart byId(UUID id) {
    return DSL.val(id, SQLDataType.UUID);
  }

  /** The command whose idempotency key is {@code key} (null when the key is unknown). */
  public static QueryPart byKey(CommandTables t, String key) {
    return DSL.field(
        "(SELECT k.message_id FROM {0} k WHERE k.idempotency_key = {1})",
        SQLDataType.UUID, t.idempotencyKeys, DSL.val(key, SQLDataType.CLOB));
  }

  /** A pending command as read; {@code later} when it is due in the future (database clock). */
  public record Row(
      UUID messageId,
      String type,
      String correlationId,
      Instant enqueuedAt,
      Instant deliverAt,
      int failures,
      String leasedBy,
      boolean later) {}

  /**
   * Reads the command {@code which} selects, or null: a plain read, which a read-only transaction
   * and a role with {@code SELECT} only may run.
   */
  public static Row find(DSLContext dsl, CommandTables t, QueryPart which) {
    Record r =
        dsl.resultQuery(
                "SELECT c.message_id, c.message_type, c.correlation_id,"
                    + " CASE WHEN isfinite(c.enqueued_at) THEN c.enqueued_at"
                    + " ELSE to_timestamp(0) END AS enqueued_at,"
                    + " CASE WHEN isfinite(c.deliver_at) THEN c.deliver_at"
                    + " ELSE to_timestamp(0) END AS deliver_at,"
                    + " c.failures, c.leased_by, c.deliver_at > clock_timestamp() AS later"
                    + " FROM {0} c WHERE c.message_id = {1}",
                t.commands, which)
            .fetchOne();
    if (r == null) {
      return null;
    }
    return new Row(
        r.get(0, UUID.class),
        r.get(1, String.class),
        r.get(2, String.class),
        r.get(3, Instant.class),
        r.get(4, Instant.class),
        r.get(5, Integer.class),
        r.get(6, String.class),
        r.get(7, Boolean.class));
  }

  /** What a write found: the command's id as the snapshot saw it (null: none), and if it wrote. */
  public record Written(UUID messageId, boolean written) {}

  /** Deletes the command {@code which} selects unless a handler holds it. */
  public static Written cancel(DSLContext dsl, CommandTables t, QueryPart which) {
    return write(
        dsl,
        t,
        which,
        DSL.sql(
            "DELETE FROM {0} WHERE message_id IN (SELECT message_id FROM free)"
                + " RETURNING message_id",
            t.commands));
  }

  /**
   * Makes the command {@code which} selects due at {@code at} unless a handler holds it. A lease
   * that had expired ends here: its attempt counts as a failure, as a claim would count it, and its
   * fencing token is cleared, so the holder of that lease can no longer complete the command.
   */
  public static Written reschedule(DSLContext dsl, CommandTables t, QueryPart which, Instant at) {
    return write(
        dsl,
        t,
        which,
        DSL.sql(
            "UPDATE {0} SET deliver_at = {1},"
                + " failures = failures + CASE WHEN leased_by IS NULL THEN 0 ELSE 1 END,"
                + " leased_by = NULL, lease_token = NULL"
                + " WHERE message_id IN (SELECT message_id FROM free) RETURNING message_id",
            t.commands, DSL.val(at, SQLDataType.INSTANT)));
  }

  private static Written write(DSLContext dsl, CommandTables t, QueryPart which, QueryPart change) {
    Record r =
        dsl.resultQuery(
                "WITH target AS (SELECT message_id FROM {0} WHERE message_id = {1}),"
                    + " free AS (SELECT message_id FROM {0} WHERE message_id = {1}"
                    + " AND (leased_by IS NULL OR deliver_at <= clock_timestamp())"
                    + " FOR UPDATE SKIP LOCKED),"
                    + " changed AS ({2})"
                    + " SELECT (SELECT message_id FROM target), (SELECT count(*) FROM changed)",
                t.commands, which, change)
            .fetchOne();
    return new Written(r.get(0, UUID.class), r.get(1, Long.class) > 0);
  }
}
