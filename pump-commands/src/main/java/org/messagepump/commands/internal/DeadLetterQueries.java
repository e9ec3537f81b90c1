package org.messagepump.commands.internal;

import static org.messagepump.commands.internal.CommandTables.CAUSATION_ID;
import static org.messagepump.commands.internal.CommandTables.CLOCK_TIMESTAMP;
import static org.messagepump.commands.internal.CommandTables.CORRELATION_ID;
import static org.messagepump.commands.internal.CommandTables.DELIVER_AT;
import static org.messagepump.commands.internal.CommandTables.ENQUEUED_AT;
import static org.messagepump.commands.internal.CommandTables.FAILURES;
import static org.messagepump.commands.internal.CommandTables.HEADERS;
import static org.messagepump.commands.internal.CommandTables.LAST_ERROR;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_ID;
import static org.messagepump.commands.internal.CommandTables.MESSAGE_TYPE;
import static org.messagepump.commands.internal.CommandTables.PARKED_AT;
import static org.messagepump.commands.internal.CommandTables.PAYLOAD;
import static org.messagepump.commands.internal.CommandTables.PRIORITY;

import java.util.List;
import java.util.UUID;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Envelope;

/**
 * The SQL of dead letters: list, retry, discard (a parking is written by {@link
 * DeliveryStatements}).
 */
public final class DeadLetterQueries {

  /** A dead letter's columns: what a command keeps, then why and when it was parked. */
  static final List<Field<?>> COLUMNS =
      List.copyOf(CommandQueries.columns(FAILURES, LAST_ERROR, PARKED_AT));

  /**
   * What listing reads: {@link #COLUMNS}, with a time that is not finite ({@code 'infinity'}) shown
   * as the epoch, so one odd row never makes a listing fail.
   */
  private static final List<Field<?>> READ =
      COLUMNS.stream().map(DeadLetterQueries::finite).toList();

  private DeadLetterQueries() {}

  @SuppressWarnings("unchecked")
  private static Field<?> finite(Field<?> f) {
    if (f != ENQUEUED_AT && f != PARKED_AT) {
      return f;
    }
    Field<java.time.Instant> t = (Field<java.time.Instant>) f;
    return DSL.when(DSL.condition("isfinite({0})", t), t)
        .otherwise(DSL.function("to_timestamp", t.getDataType(), DSL.inline(0)))
        .as(t.getName());
  }

  /**
   * A dead letter as read: the command as stored, its failures, last error, parking time and
   * priority (the public {@code DeadLetter} is made of it).
   */
  public record Parked(
      Envelope envelope,
      int failures,
      String lastError,
      java.time.Instant parkedAt,
      int priority) {}

  /** Dead letters, oldest parked first; {@code type} null means all types. */
  public static List<Parked> list(DSLContext dsl, CommandTables t, String type, int limit) {
    return dsl.select(READ)
        .from(t.deadLetters)
        .where(ofType(type))
        .orderBy(PARKED_AT, MESSAGE_ID)
        .limit(limit)
        .fetch(DeadLetterQueries::deadLetter);
  }

  /**
   * Dead letters after {@code (afterAt, afterId)} in the order of {@link #list} (keyset paging);
   * {@code type} null means all types.
   */
  public static List<Parked> listAfter(
      DSLContext dsl,
      CommandTables t,
      String type,
      java.time.Instant afterAt,
      UUID afterId,
      int limit) {
    return dsl.select(READ)
        .from(t.deadLetters)
        .where(ofType(type))
        .and(org.jooq.impl.DSL.row(PARKED_AT, MESSAGE_ID).gt(afterAt, afterId))
        .orderBy(PARKED_AT, MESSAGE_ID)
        .limit(limit)
        .fetch(DeadLetterQueries::deadLetter);
  }

  /** One dead letter, or null. */
  public static Parked find(DSLContext dsl, CommandTables t, UUID id) {
    return dsl.select(READ)
        .from(t.deadLetters)
        .where(MESSAGE_ID.eq(id))
        .fetchOne(DeadLetterQueries::deadLetter);
  }

  /** Number of dead letters of a type (null: all). */
  public static long count(DSLContext dsl, CommandTables t, String type) {
    return dsl.selectCount().from(t.deadLetters).where(ofType(type)).fetchOne(0, Long.class);
  }

  /**
   * Moves the selected dead letters back into the queue, due now, failures reset, with their
   * priority; returns how many.
   */
  public static int retry(DSLContext dsl, CommandTables t, Condition which) {
    List<UUID> ids = lock(dsl, t, which);
    // One array parameter, whatever the number of ids (a list would pass 65,535 bind values),
    // joined rather than tested with "= ANY(array)", which many ids would make a row-by-row test.
    Condition locked =
        MESSAGE_ID.in(
            DSL.select(DSL.field(DSL.name("locked", "id"), UUID.class))
                .from(
                    DSL.unnest(DSL.val(ids.toArray(UUID[]::new), SQLDataType.UUID.array()))
                        .as("locked", "id")));
    if (ids.isEmpty()) {
      return 0;
    }
    dsl.insertInto(
            t.commands,
            MESSAGE_ID,
            MESSAGE_TYPE,
            CORRELATION_ID,
            CAUSATION_ID,
            HEADERS,
            PAYLOAD,
            FAILURES,
            ENQUEUED_AT,
            DELIVER_AT,
            PRIORITY)
        .select(
            dsl.select(
                    MESSAGE_ID,
                    MESSAGE_TYPE,
                    CORRELATION_ID,
                    CAUSATION_ID,
                    HEADERS,
                    PAYLOAD,
                    DSL.val(0, FAILURES),
                    ENQUEUED_AT,
                    CLOCK_TIMESTAMP,
                    PRIORITY)
                .from(t.deadLetters)
                .where(locked))
        .onConflictDoNothing()
        .execute();
    return dsl.deleteFrom(t.deadLetters).where(locked).execute();
  }

  /** Deletes the selected dead letters; returns how many. */
  public static int discard(DSLContext dsl, CommandTables t, Condition which) {
    return dsl.deleteFrom(t.deadLetters).where(which).execute();
  }

  /** The condition selecting one dead letter. */
  public static Condition byId(UUID id) {
    return MESSAGE_ID.eq(id);
  }

  /** The condition selecting the dead letters of a type (null: all). */
  public static Condition ofType(String type) {
    return type == null ? DSL.noCondition() : MESSAGE_TYPE.eq(type);
  }

  private static List<UUID> lock(DSLContext dsl, CommandTables t, Condition which) {
    return dsl.select(MESSAGE_ID).from(t.deadLetters).where(which).forUpdate().fetch(MESSAGE_ID);
  }

  /**
   * The stored headers, or none when they are not a JSON object of strings (a dead letter is listed
   * whatever its content; retry copies the stored column as it is).
   */
  private static java.util.Map<String, String> readableHeaders(org.jooq.JSONB json) {
    try {
      return HeadersJson.read(json);
    } catch (RuntimeException e) {
      return java.util.Map.of();
    }
  }

  private static Parked deadLetter(Record r) {
    Envelope e =
        new Envelope(
            r.get(MESSAGE_ID).toString(),
            r.get(MESSAGE_TYPE),
            r.get(CORRELATION_ID),
            r.get(CAUSATION_ID),
            r.get(ENQUEUED_AT),
            readableHeaders(r.get(HEADERS)),
            r.get(PAYLOAD));
    return new Parked(e, r.get(FAILURES), r.get(LAST_ERROR), r.get(PARKED_AT), r.get(PRIORITY));
  }
}
