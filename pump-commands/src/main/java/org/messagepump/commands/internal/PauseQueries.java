package org.messagepump.commands.internal;

import static org.messagepump.commands.internal.CommandTables.MESSAGE_TYPE;
import static org.messagepump.commands.internal.CommandTables.PAUSED_AT;
import static org.messagepump.commands.internal.CommandTables.REASON;

import java.util.ArrayList;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Record;

/** The SQL of the cluster-wide pauses of command types (table {@code paused_types}, V2). */
public final class PauseQueries {

  private PauseQueries() {}

  /** Pauses {@code type}; true when it was not paused yet (a second pause keeps the first). */
  public static boolean pause(DSLContext dsl, CommandTables t, String type, String reason) {
    return dsl.insertInto(t.pausedTypes)
            .set(MESSAGE_TYPE, type)
            .set(REASON, reason)
            .onConflictDoNothing()
            .execute()
        == 1;
  }

  /** Resumes {@code type}; true when it was paused. */
  public static boolean resume(DSLContext dsl, CommandTables t, String type) {
    return dsl.deleteFrom(t.pausedTypes).where(MESSAGE_TYPE.eq(type)).execute() == 1;
  }

  /** One row of {@code paused_types}. */
  public record Row(String type, java.time.Instant pausedAt, String reason) {}

  /** The paused types, by name. */
  public static List<Row> list(DSLContext dsl, CommandTables t) {
    List<Row> out = new ArrayList<>();
    for (Record r :
        dsl.select(MESSAGE_TYPE, PAUSED_AT, REASON)
            .from(t.pausedTypes)
            .orderBy(MESSAGE_TYPE)
            .fetch()) {
      out.add(new Row(r.get(MESSAGE_TYPE), r.get(PAUSED_AT), r.get(REASON)));
    }
    return out;
  }
}
