package org.messagepump.commands.internal;

import static org.messagepump.commands.internal.CommandTables.ATTEMPTS;
import static org.messagepump.commands.internal.CommandTables.EXPIRES_AT;
import static org.messagepump.commands.internal.CommandTables.HANDLED_AT;
import static org.messagepump.commands.internal.CommandTables.HANDLING_MICROS;
import static org.messagepump.commands.internal.CommandTables.HISTORY_ID;
import static org.messagepump.commands.internal.CommandTables.IDEMPOTENCY_KEY;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_ID;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_TYPE;
import static org.messagepump.commands.internal.CommandTables.PARKED_AT;
import static org.messagepump.commands.internal.CommandTables.STATEMENT_TIMESTAMP;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;

/**
 * The SQL of the command history and retention: reading the history, and purging expired keys, old
 * dead letters and old history in bounded batches (the keys of handled or parked commands are
 * released, and the history written, by {@link DeliveryStatements}).
 */
public final class RetentionQueries {

  private RetentionQueries() {}

  /**
   * One handled command as the history records it.
   *
   * @param messageId the command's id
   * @param type its type
   * @param idempotencyKey its key, null when none
   * @param attempts the attempt that handled it (1 for the first)
   * @param handlingMicros how long its handler ran, in microseconds
   */
  public record HistoryRow(
      UUID messageId, String type, String idempotencyKey, int attempts, long handlingMicros) {}

  /**
   * One page of the history, newest first: at most {@code limit} rows handled before the cursor
   * {@code (beforeAt, beforeId)} (both null: the newest), read on the {@code (handled_at,
   * history_id)} index.
   */
  public static List<Handled> history(
      DSLContext dsl, CommandTables t, Instant beforeAt, Long beforeId, int limit) {
    Condition before =
        beforeAt == null
            ? DSL.noCondition()
            : DSL.row(HANDLED_AT, HISTORY_ID)
                .lt(DSL.row(DSL.val(beforeAt, HANDLED_AT), DSL.val(beforeId, HISTORY_ID)));
    return dsl.select(
            HISTORY_ID,
            MESSAGE_ID,
            MESSAGE_TYPE,
            IDEMPOTENCY_KEY,
            ATTEMPTS,
            HANDLING_MICROS,
            HANDLED_AT)
        .from(t.commandHistory)
        .where(before)
        .orderBy(HANDLED_AT.desc(), HISTORY_ID.desc())
        .limit(limit)
        .fetch(
            r ->
                new Handled(
                    r.value1(),
                    r.value2(),
                    r.value3(),
                    r.value4(),
                    r.value5(),
                    r.value6(),
                    r.value7()));
  }

  /** A history row as read. */
  public record Handled(
      long historyId,
      UUID messageId,
      String type,
      String idempotencyKey,
      int attempts,
      long handlingMicros,
      Instant handledAt) {}

  /**
   * Deletes up to {@code batch} expired keys (of a period) in one statement and returns how many,
   * the oldest expiry first, read on the partial index of {@code expires_at}. The keys are locked
   * with {@code SKIP LOCKED}: a key an enqueue is taking over right now is left for the next batch,
   * and no enqueue waits longer than this statement's transaction.
   */
  public static int purgeExpiredKeys(DSLContext dsl, CommandTables t, int batch) {
    return purge(
        dsl,
        t.idempotencyKeys,
        IDEMPOTENCY_KEY,
        EXPIRES_AT.isNotNull().and(EXPIRES_AT.le(STATEMENT_TIMESTAMP)),
        EXPIRES_AT,
        batch);
  }

  /** Deletes up to {@code batch} dead letters parked more than {@code age} ago; how many. */
  public static int purgeDeadLetters(DSLContext dsl, CommandTables t, Duration age, int batch) {
    return purge(dsl, t.deadLetters, MESSAGE_ID, PARKED_AT.lt(ago(age)), PARKED_AT, batch);
  }

  /** Deletes up to {@code batch} history rows written more than {@code age} ago; how many. */
  public static int purgeHistory(DSLContext dsl, CommandTables t, Duration age, int batch) {
    return purge(dsl, t.commandHistory, HISTORY_ID, HANDLED_AT.lt(ago(age)), HANDLED_AT, batch);
  }

  /**
   * {@code statement_timestamp() - age}, the age bound as an interval: stable within the statement,
   * so PostgreSQL uses it as an index condition.
   */
  private static Field<Instant> ago(Duration age) {
    return STATEMENT_TIMESTAMP.minus(DSL.val(org.jooq.types.DayToSecond.valueOf(age)));
  }

  /**
   * {@code DELETE FROM table WHERE key = ANY(ARRAY(SELECT key FROM table WHERE old ORDER BY orderBy
   * LIMIT batch FOR UPDATE SKIP LOCKED))}: the oldest rows first, read on the index of {@code
   * orderBy}, found again by primary key; the limit is an inlined integer of the code.
   */
  private static <K> int purge(
      DSLContext dsl,
      Table<Record> table,
      Field<K> key,
      Condition old,
      Field<Instant> orderBy,
      int batch) {
    Table<?> doomed =
        dsl.select(key)
            .from(table)
            .where(old)
            .orderBy(orderBy)
            .limit(DSL.inline(batch))
            .forUpdate()
            .skipLocked()
            .asTable("doomed");
    return dsl.deleteFrom(table)
        .where(
            key.eq(
                DSL.any(
                    DSL.array(
                        dsl.select(doomed.field(key.getName(), key.getType())).from(doomed)))))
        .execute();
  }
}
