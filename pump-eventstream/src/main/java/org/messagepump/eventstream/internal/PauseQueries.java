package org.messagepump.eventstream.internal;

import java.time.OffsetDateTime;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The SQL of the cluster-wide pauses of handler keys (table {@code paused_handlers}, V3), through
 * jOOQ: the key and the reason are bind values.
 */
public final class PauseQueries {

  private static final Field<String> KEY = DSL.field(DSL.name("handler_key"), SQLDataType.CLOB);
  private static final Field<OffsetDateTime> AT =
      DSL.field(DSL.name("paused_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
  private static final Field<String> REASON = DSL.field(DSL.name("reason"), SQLDataType.CLOB);

  private PauseQueries() {}

  private static Table<Record> table(EventTables t) {
    return DSL.table(DSL.name(t.schema(), "paused_handlers"));
  }

  /**
   * Pauses {@code handlerKey}; true when it was not paused yet (a second pause keeps the first).
   */
  public static boolean pause(DSLContext dsl, EventTables t, String handlerKey, String reason) {
    return dsl.insertInto(table(t))
            .set(KEY, handlerKey)
            .set(REASON, reason)
            .onConflictDoNothing()
            .execute()
        == 1;
  }

  /** Resumes {@code handlerKey}; true when it was paused. */
  public static boolean resume(DSLContext dsl, EventTables t, String handlerKey) {
    return dsl.deleteFrom(table(t)).where(KEY.eq(handlerKey)).execute() == 1;
  }

  /** One row of {@code paused_handlers}. */
  public record Row(String handlerKey, java.time.Instant pausedAt, String reason) {}

  /** The paused handler keys, by key. */
  public static List<Row> list(DSLContext dsl, EventTables t) {
    return dsl.select(KEY, AT, REASON)
        .from(table(t))
        .orderBy(KEY)
        .fetch(r -> new Row(r.value1(), r.value2().toInstant(), r.value3()));
  }
}
