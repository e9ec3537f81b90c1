package org.messagepump.balancer.internal;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The cluster-wide pauses of partition groups (table {@code paused_groups}, V2). Every value is a
 * bind value. The pumps' check is a predicate of the acquisition statement ({@link #notPaused}).
 */
public final class GroupPauses {

  private static final Table<Record> T =
      DSL.table(DSL.name(BalancerTables.SCHEMA, "paused_groups"));
  private static final Field<String> GROUP =
      DSL.field(DSL.name("partition_group"), SQLDataType.CLOB);
  private static final Field<OffsetDateTime> AT =
      DSL.field(DSL.name("paused_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
  private static final Field<String> REASON = DSL.field(DSL.name("reason"), SQLDataType.CLOB);

  private GroupPauses() {}

  /** One row of {@code paused_groups}. */
  public record Row(String group, Instant pausedAt, String reason) {}

  /**
   * The condition "{@code group} is not paused", for the acquisition statement: an uncorrelated
   * {@code NOT EXISTS} on the primary key, which PostgreSQL evaluates once per execution (an
   * InitPlan), so a paused group's acquisition returns no row and a running one pays one index
   * probe inside the statement instead of a statement (a round trip) of its own.
   */
  public static Condition notPaused(Field<String> group) {
    return DSL.notExists(DSL.selectOne().from(T).where(GROUP.eq(group)));
  }

  /** Pauses {@code group}; true when it was not paused yet (a second pause keeps the first). */
  public static boolean pause(DSLContext dsl, String group, String reason) {
    return dsl.insertInto(T).set(GROUP, group).set(REASON, reason).onConflictDoNothing().execute()
        == 1;
  }

  /** Resumes {@code group}; true when it was paused. */
  public static boolean resume(DSLContext dsl, String group) {
    return dsl.deleteFrom(T).where(GROUP.eq(group)).execute() == 1;
  }

  /** Whether {@code group} is paused (outside the pump). */
  public static boolean paused(DSLContext dsl, String group) {
    return dsl.fetchExists(DSL.selectOne().from(T).where(GROUP.eq(group)));
  }

  /** The paused groups, by name. */
  public static List<Row> list(DSLContext dsl) {
    return dsl.select(GROUP, AT, REASON)
        .from(T)
        .orderBy(GROUP)
        .fetch(r -> new Row(r.value1(), r.value2().toInstant(), r.value3()));
  }
}
