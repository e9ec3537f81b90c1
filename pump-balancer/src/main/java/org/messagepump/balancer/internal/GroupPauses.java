package org.messagepump.balancer.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The cluster-wide pauses of partition groups (table {@code paused_groups}, V2). Every value is a
 * bind value. Kept apart from {@link DeliveryQueries}: the pause check is its own statement (see
 * {@link #isPaused}), not a predicate of the acquisition statement.
 */
public final class GroupPauses {

  private static final Table<Record> T = DSL.table(DSL.name(Schema.SCHEMA, "paused_groups"));
  private static final Field<String> GROUP =
      DSL.field(DSL.name("partition_group"), SQLDataType.CLOB);
  private static final Field<OffsetDateTime> AT =
      DSL.field(DSL.name("paused_at"), SQLDataType.TIMESTAMPWITHTIMEZONE);
  private static final Field<String> REASON = DSL.field(DSL.name("reason"), SQLDataType.CLOB);

  private GroupPauses() {}

  /** One row of {@code paused_groups}. */
  public record Row(String group, Instant pausedAt, String reason) {}

  /**
   * The text of the pause check in the schema of {@code ctx}, rendered once per driver (with one
   * bind marker, the group): a primary-key probe.
   */
  public static String checkSql(Schema.Ctx ctx) {
    return ctx.render()
        .render(
            DSL.select(
                DSL.field(
                    DSL.exists(DSL.selectOne().from(T).where(GROUP.eq(DSL.val("", GROUP)))))));
  }

  /** True when {@code group} is paused, on the caller's connection (its transaction). */
  public static boolean isPaused(Connection c, String checkSql, String group) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(checkSql)) {
      ps.setString(1, group);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    }
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
