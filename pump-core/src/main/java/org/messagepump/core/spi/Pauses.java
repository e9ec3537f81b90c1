package org.messagepump.core.spi;

import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Limits;
import org.messagepump.core.Pause;

/**
 * The cluster-wide pauses of one driver: one table of the driver's schema, with a name column (its
 * primary key: the command type, the handler key, the partition group), {@code paused_at
 * timestamptz NOT NULL DEFAULT now()} and {@code reason text}. A row is a pause; every pump's claim
 * statement carries {@link #notPaused}, so a paused name's work is not acquired, by any process,
 * without a statement of its own.
 *
 * <p>Every value is a bind value. Names and reasons are checked before anything is sent, with
 * {@link IllegalArgumentException} naming the argument, so the caller's transaction survives a bad
 * one: a name must not be null or empty, hold NUL or be over {@link Limits#MAX_KEY_BYTES} UTF-8
 * bytes (nor be blank, when {@link #refusingBlankNames}); a reason may be null, and otherwise must
 * not hold NUL or be over {@link Limits#MAX_REASON_CHARS} UTF-8 bytes.
 *
 * <p>The statements run on the {@link DSLContext} given (the caller's transaction), which renders
 * the table's name as the driver set it up (its schema, or a render mapping of it). Immutable and
 * thread-safe.
 *
 * <pre>{@code
 * Pauses pauses =
 *     Pauses.of(DSL.table(DSL.name(schema, "paused_types")), MESSAGE_TYPE, "type");
 * pauses.pause(tx.dsl(), "PlaceOrder", "supplier down");
 * select.where(pauses.notPaused(MESSAGE_TYPE)); // in the claim
 * }</pre>
 */
public final class Pauses {

  private static final Field<Instant> PAUSED_AT =
      DSL.field(DSL.name("paused_at"), SQLDataType.INSTANT);
  private static final Field<String> REASON = DSL.field(DSL.name("reason"), SQLDataType.CLOB);

  private final Table<?> table;
  private final Field<String> name;
  private final String argument;
  private final boolean blankRefused;

  private Pauses(Table<?> table, Field<String> name, String argument, boolean blankRefused) {
    this.table = table;
    this.name = name;
    this.argument = argument;
    this.blankRefused = blankRefused;
  }

  /**
   * The pauses stored in {@code table}, keyed by its column {@code name}, written unqualified in
   * the statements (the column of {@code table} inside them). {@code argument} names the paused
   * name in exception messages ({@code "type"}, {@code "handlerKey"}, {@code "group"}).
   *
   * @throws NullPointerException when an argument is null
   * @throws IllegalArgumentException when {@code argument} is empty
   */
  public static Pauses of(Table<?> table, Field<String> name, String argument) {
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(argument, "argument");
    if (argument.isEmpty()) {
      throw new IllegalArgumentException("argument must not be empty");
    }
    return new Pauses(table, name, argument, false);
  }

  /** These pauses, with blank names (only white space) refused as well. */
  public Pauses refusingBlankNames() {
    return new Pauses(table, name, argument, true);
  }

  /**
   * Pauses {@code name}; true when it was not paused yet. A second pause keeps the first one's time
   * and reason and returns false.
   *
   * @param reason why, for operators, or null
   * @throws IllegalArgumentException for a bad name or reason; nothing is sent
   */
  public boolean pause(DSLContext dsl, String name, String reason) {
    checkName(name);
    checkReason(reason);
    return dsl.insertInto(table)
            .set(this.name, name)
            .set(REASON, reason)
            .onConflictDoNothing()
            .execute()
        == 1;
  }

  /**
   * Resumes {@code name}; true when it was paused.
   *
   * @throws IllegalArgumentException for a bad name; nothing is sent
   */
  public boolean resume(DSLContext dsl, String name) {
    checkName(name);
    return dsl.deleteFrom(table).where(this.name.eq(name)).execute() == 1;
  }

  /**
   * True while {@code name} is paused.
   *
   * @throws IllegalArgumentException for a bad name; nothing is sent
   */
  public boolean isPaused(DSLContext dsl, String name) {
    checkName(name);
    return dsl.fetchExists(DSL.selectOne().from(table).where(this.name.eq(name)));
  }

  /** The pauses, ordered by name (the database's collation); an unmodifiable list. */
  public List<Pause> list(DSLContext dsl) {
    return List.copyOf(
        dsl.select(name, PAUSED_AT, REASON)
            .from(table)
            .orderBy(name)
            .fetch(r -> new Pause(r.value1(), r.value2(), r.value3())));
  }

  /**
   * The condition "{@code name} is not paused", for a claim statement: {@code NOT EXISTS (SELECT 1
   * FROM table WHERE name_column = name)}, a primary-key probe inside the claim, never a statement
   * of its own. With a bind value for {@code name}, PostgreSQL evaluates it once per execution (an
   * InitPlan, a one-time filter): a paused name's claim scans and locks nothing. With a column of
   * the claim's rows (one row per claimed name, say), once per such row.
   *
   * @param name the claimed name: a bind value, or a column of the claim's own tables
   */
  public Condition notPaused(Field<String> name) {
    Objects.requireNonNull(name, "name");
    return DSL.notExists(DSL.selectOne().from(table).where(this.name.eq(name)));
  }

  /**
   * Checks {@code name} as {@link #pause}, {@link #resume} and {@link #isPaused} do, for a caller
   * that checks before it opens a transaction; returns it.
   *
   * @throws IllegalArgumentException when it is null, empty, holds NUL, is over {@link
   *     Limits#MAX_KEY_BYTES} UTF-8 bytes, or is blank and blank names are refused
   */
  public String checkName(String name) {
    if (name == null) {
      throw new IllegalArgumentException(argument + " must not be null");
    }
    Inputs.key(argument, name);
    if (blankRefused && name.isBlank()) {
      throw new IllegalArgumentException(argument + " must not be blank");
    }
    return name;
  }

  /**
   * Checks a pause's reason as {@link #pause} does; returns it.
   *
   * @throws IllegalArgumentException when it holds NUL or is over {@link Limits#MAX_REASON_CHARS}
   *     UTF-8 bytes (null passes)
   */
  public static String checkReason(String reason) {
    return reason == null ? null : Inputs.text("reason", reason, Limits.MAX_REASON_CHARS);
  }
}
