package org.messagepump.commands.internal;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The SQL of recurring commands (table {@code schedules}, V3). Every value is bound; the check
 * locks the due rows with {@code FOR UPDATE SKIP LOCKED} so that concurrent schedulers split them
 * and each tick is fired by exactly one.
 */
public final class ScheduleQueries {

  private ScheduleQueries() {}

  /** Column {@code name}. */
  public static final Field<String> NAME = DSL.field(DSL.name("name"), SQLDataType.CLOB);

  static final Field<String> CRON = DSL.field(DSL.name("cron"), SQLDataType.CLOB);
  static final Field<Long> INTERVAL_MS = DSL.field(DSL.name("interval_ms"), SQLDataType.BIGINT);
  static final Field<String> ZONE = DSL.field(DSL.name("zone"), SQLDataType.CLOB);
  static final Field<Instant> ANCHOR_AT = DSL.field(DSL.name("anchor_at"), SQLDataType.INSTANT);
  static final Field<Integer> CATCH_UP = DSL.field(DSL.name("catch_up"), SQLDataType.INTEGER);
  static final Field<Long> GRACE_MS = DSL.field(DSL.name("misfire_grace_ms"), SQLDataType.BIGINT);
  static final Field<Instant> PAUSED_AT = DSL.field(DSL.name("paused_at"), SQLDataType.INSTANT);
  static final Field<Instant> NEXT_FIRE_AT =
      DSL.field(DSL.name("next_fire_at"), SQLDataType.INSTANT);
  static final Field<Instant> LAST_FIRED_AT =
      DSL.field(DSL.name("last_fired_at"), SQLDataType.INSTANT);
  static final Field<Long> FIRED = DSL.field(DSL.name("fired"), SQLDataType.BIGINT);
  static final Field<Long> TRIGGERED = DSL.field(DSL.name("triggered"), SQLDataType.BIGINT);
  static final Field<Instant> UPDATED_AT = DSL.field(DSL.name("updated_at"), SQLDataType.INSTANT);
  static final Field<Instant> NOW =
      DSL.field(DSL.name("db_now"), SQLDataType.INSTANT); // alias of the database clock

  /**
   * One schedule row.
   *
   * @param cron the cron expression, or null for an interval
   * @param intervalMs the interval, or null for a cron expression
   * @param catchUp missed ticks fired on catch-up (0: skip)
   */
  public record Row(
      String name,
      String cron,
      Long intervalMs,
      String zone,
      Instant anchorAt,
      int catchUp,
      long graceMs,
      String type,
      byte[] payload,
      String correlationId,
      Map<String, String> headers,
      Instant pausedAt,
      Instant nextFireAt,
      Instant lastFiredAt,
      long fired,
      long triggered,
      int priority) {}

  /** What the check statement returns: the locked due rows and the database clock. */
  public record Due(List<Row> rows, Instant now) {}

  private static List<Field<?>> columns() {
    return List.of(
        NAME,
        CRON,
        INTERVAL_MS,
        ZONE,
        ANCHOR_AT,
        CATCH_UP,
        GRACE_MS,
        CommandTables.MESSAGE_TYPE,
        CommandTables.PAYLOAD,
        CommandTables.CORRELATION_ID,
        CommandTables.HEADERS,
        PAUSED_AT,
        NEXT_FIRE_AT,
        LAST_FIRED_AT,
        FIRED,
        TRIGGERED,
        CommandTables.PRIORITY);
  }

  private static Row row(Record r) {
    return new Row(
        r.get(NAME),
        r.get(CRON),
        r.get(INTERVAL_MS),
        r.get(ZONE),
        r.get(ANCHOR_AT),
        r.get(CATCH_UP),
        r.get(GRACE_MS),
        r.get(CommandTables.MESSAGE_TYPE),
        r.get(CommandTables.PAYLOAD),
        r.get(CommandTables.CORRELATION_ID),
        HeadersJson.read(r.get(CommandTables.HEADERS)),
        r.get(PAUSED_AT),
        r.get(NEXT_FIRE_AT),
        r.get(LAST_FIRED_AT),
        r.get(FIRED),
        r.get(TRIGGERED),
        r.get(CommandTables.PRIORITY));
  }

  /** The database clock now. */
  public static Instant now(DSLContext dsl) {
    return dsl.select(CommandTables.CLOCK_TIMESTAMP).fetchOne().value1();
  }

  /** The schedule {@code name}, locked for update in this transaction, if it exists. */
  public static Optional<Row> lock(DSLContext dsl, CommandTables t, String name) {
    return dsl.select(columns())
        .from(t.schedules)
        .where(NAME.eq(name))
        .forUpdate()
        .fetchOptional()
        .map(ScheduleQueries::row);
  }

  /** Every schedule, by name. */
  public static List<Row> list(DSLContext dsl, CommandTables t) {
    List<Row> out = new ArrayList<>();
    for (Record r : dsl.select(columns()).from(t.schedules).orderBy(NAME).fetch()) {
      out.add(row(r));
    }
    return out;
  }

  /**
   * Inserts a new schedule; false when one of that name exists already (then nothing changed: a
   * concurrent definition won, and the caller updates it instead).
   */
  public static boolean insert(DSLContext dsl, CommandTables t, Row s) {
    return dsl.insertInto(t.schedules)
            .set(NAME, s.name())
            .set(CRON, s.cron())
            .set(INTERVAL_MS, s.intervalMs())
            .set(ZONE, s.zone())
            .set(ANCHOR_AT, s.anchorAt())
            .set(CATCH_UP, s.catchUp())
            .set(GRACE_MS, s.graceMs())
            .set(CommandTables.MESSAGE_TYPE, s.type())
            .set(CommandTables.PAYLOAD, s.payload())
            .set(CommandTables.CORRELATION_ID, s.correlationId())
            .set(CommandTables.HEADERS, HeadersJson.write(s.headers()))
            .set(CommandTables.PRIORITY, (short) s.priority())
            .set(NEXT_FIRE_AT, s.nextFireAt())
            .onConflictDoNothing()
            .execute()
        == 1;
  }

  /** Rewrites a locked schedule's definition and next tick; its state (pause, counts) stays. */
  public static void redefine(DSLContext dsl, CommandTables t, Row s) {
    dsl.update(t.schedules)
        .set(CRON, s.cron())
        .set(INTERVAL_MS, s.intervalMs())
        .set(ZONE, s.zone())
        .set(ANCHOR_AT, s.anchorAt())
        .set(CATCH_UP, s.catchUp())
        .set(GRACE_MS, s.graceMs())
        .set(CommandTables.MESSAGE_TYPE, s.type())
        .set(CommandTables.PAYLOAD, s.payload())
        .set(CommandTables.CORRELATION_ID, s.correlationId())
        .set(CommandTables.HEADERS, HeadersJson.write(s.headers()))
        .set(CommandTables.PRIORITY, (short) s.priority())
        .set(NEXT_FIRE_AT, s.nextFireAt())
        .set(UPDATED_AT, CommandTables.CLOCK_TIMESTAMP)
        .where(NAME.eq(s.name()))
        .execute();
  }

  /**
   * Locks up to {@code limit} running schedules whose next tick is due, soonest first, skipping
   * those another scheduler holds; returns them with the database clock at the statement's start.
   */
  public static Due lockDue(DSLContext dsl, CommandTables t, int limit) {
    List<Field<?>> fields = new ArrayList<>(columns());
    fields.add(CommandTables.STATEMENT_TIMESTAMP.as(NOW));
    Condition due = PAUSED_AT.isNull().and(NEXT_FIRE_AT.le(CommandTables.STATEMENT_TIMESTAMP));
    List<Row> rows = new ArrayList<>();
    Instant now = null;
    for (Record r :
        dsl.select(fields)
            .from(t.schedules)
            .where(due)
            .orderBy(NEXT_FIRE_AT)
            .limit(limit)
            .forUpdate()
            .skipLocked()
            .fetch()) {
      rows.add(row(r));
      now = r.get(NOW);
    }
    return new Due(rows, now);
  }

  /** Records a check's ticks of a locked schedule: its new next tick, the last fired, the count. */
  public static void fired(
      DSLContext dsl, CommandTables t, String name, Instant next, Instant lastFired, int count) {
    var update = dsl.update(t.schedules).set(NEXT_FIRE_AT, next);
    if (count > 0) {
      update = update.set(LAST_FIRED_AT, lastFired).set(FIRED, FIRED.plus(DSL.val(count)));
    }
    update.where(NAME.eq(name)).execute();
  }

  /** Counts a manual trigger of a locked schedule. */
  public static void triggered(DSLContext dsl, CommandTables t, String name) {
    dsl.update(t.schedules)
        .set(TRIGGERED, TRIGGERED.plus(DSL.val(1L)))
        .where(NAME.eq(name))
        .execute();
  }

  /** Pauses a schedule; true when it was running. */
  public static boolean pause(DSLContext dsl, CommandTables t, String name) {
    return dsl.update(t.schedules)
            .set(PAUSED_AT, CommandTables.CLOCK_TIMESTAMP)
            .where(NAME.eq(name).and(PAUSED_AT.isNull()))
            .execute()
        == 1;
  }

  /** Resumes a locked, paused schedule with its next tick. */
  public static void resume(DSLContext dsl, CommandTables t, String name, Instant next) {
    dsl.update(t.schedules)
        .set(PAUSED_AT, (Instant) null)
        .set(NEXT_FIRE_AT, next)
        .where(NAME.eq(name))
        .execute();
  }

  /** Deletes a schedule; true when it existed. */
  public static boolean delete(DSLContext dsl, CommandTables t, String name) {
    return dsl.deleteFrom(t.schedules).where(NAME.eq(name)).execute() == 1;
  }

  /**
   * The soonest next tick of the running schedules (locked ones included) and the database clock;
   * the first is null when none is due ever.
   */
  public static Instant[] soonest(DSLContext dsl, CommandTables t) {
    Record r =
        dsl.select(DSL.min(NEXT_FIRE_AT), CommandTables.CLOCK_TIMESTAMP)
            .from(t.schedules)
            .where(PAUSED_AT.isNull())
            .fetchOne();
    return new Instant[] {r.get(0, Instant.class), r.get(1, Instant.class)};
  }
}
