package org.messagepump.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.Limits;
import org.messagepump.core.Pause;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * {@link Pauses} on a table of the drivers' shape: idempotent pause, resume, the list by name, the
 * claim's condition, and arguments refused before anything is sent.
 */
@ExtendWith(PostgresExtension.class)
class PausesIT {

  private static final Table<Record> PAUSED = DSL.table(DSL.name("pausesit", "paused_things"));
  private static final Field<String> THING = DSL.field(DSL.name("thing"), SQLDataType.CLOB);
  private static final Table<Record> ITEMS = DSL.table(DSL.name("pausesit", "items"));
  private static final Field<String> ITEM_THING =
      DSL.field(DSL.name("items", "thing"), SQLDataType.CLOB);

  private static final Pauses PAUSES = Pauses.of(PAUSED, THING, "thing");

  private TestDatabase db;

  @BeforeEach
  void tables(TestDatabase db) {
    this.db = db;
    db.execute("CREATE SCHEMA IF NOT EXISTS pausesit");
    // The shape of paused_types, paused_handlers and paused_groups.
    db.execute(
        "CREATE TABLE IF NOT EXISTS pausesit.paused_things (thing text PRIMARY KEY,"
            + " paused_at timestamptz NOT NULL DEFAULT clock_timestamp(), reason text)");
    db.execute("CREATE TABLE IF NOT EXISTS pausesit.items (thing text NOT NULL)");
    db.execute("TRUNCATE pausesit.paused_things, pausesit.items");
  }

  private boolean is(java.util.function.Function<DSLContext, Boolean> work) {
    return inTx(work);
  }

  private <T> T inTx(java.util.function.Function<DSLContext, T> work) {
    return Transactions.inNew(db.dataSource(), "testing pauses", tx -> work.apply(tx.dsl()));
  }

  @Test
  void aSecondPauseKeepsTheFirstAndReturnsFalse() {
    assertThat(is(dsl -> PAUSES.pause(dsl, "b", "first"))).isTrue();
    assertThat(is(dsl -> PAUSES.pause(dsl, "b", "second"))).isFalse();
    assertThat(is(dsl -> PAUSES.pause(dsl, "b", null))).isFalse();
    List<Pause> list = inTx(PAUSES::list);
    assertThat(list).singleElement().satisfies(p -> assertThat(p.name()).isEqualTo("b"));
    assertThat(list.get(0).reason()).isEqualTo("first");
    assertThat(list.get(0).pausedAt()).isNotNull();
    assertThat(is(dsl -> PAUSES.isPaused(dsl, "b"))).isTrue();
  }

  @Test
  void resumeEndsThePauseOnceAndOnlyIt() {
    inTx(dsl -> PAUSES.pause(dsl, "a", "r"));
    inTx(dsl -> PAUSES.pause(dsl, "b", "r"));
    assertThat(is(dsl -> PAUSES.resume(dsl, "a"))).isTrue();
    assertThat(is(dsl -> PAUSES.resume(dsl, "a"))).isFalse();
    assertThat(is(dsl -> PAUSES.resume(dsl, "never-paused"))).isFalse();
    assertThat(is(dsl -> PAUSES.isPaused(dsl, "a"))).isFalse();
    assertThat(is(dsl -> PAUSES.isPaused(dsl, "b"))).isTrue();
    assertThat(this.<List<Pause>>inTx(PAUSES::list)).extracting(Pause::name).containsExactly("b");
  }

  @Test
  void theListIsOrderedByNameAndKeepsNamesAndReasonsAsGiven() {
    String quoted = "o'brien\"; DROP TABLE x; --";
    for (String name : new String[] {"c", "a", quoted, "b"}) {
      inTx(dsl -> PAUSES.pause(dsl, name, name.equals("a") ? null : "why " + name));
    }
    List<Pause> list = inTx(PAUSES::list);
    List<String> byDatabase =
        inTx(dsl -> dsl.select(THING).from(PAUSED).orderBy(THING).fetch(org.jooq.Record1::value1));
    assertThat(list).extracting(Pause::name).containsExactlyElementsOf(byDatabase);
    assertThat(list).extracting(Pause::name).containsExactlyInAnyOrder("a", "b", "c", quoted);
    assertThat(list).extracting(Pause::name).containsSubsequence("a", "b", "c");
    assertThat(list.get(0).reason()).isNull();
    assertThat(list)
        .filteredOn(p -> p.name().equals(quoted))
        .singleElement()
        .satisfies(p -> assertThat(p.reason()).isEqualTo("why " + quoted));
    assertThatThrownBy(() -> list.add(list.get(0)))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void theConditionExcludesPausedNamesOnly() {
    inTx(
        dsl ->
            dsl.insertInto(ITEMS, DSL.field(DSL.name("thing"), SQLDataType.CLOB))
                .values("a")
                .values("b")
                .values("c")
                .execute());
    inTx(dsl -> PAUSES.pause(dsl, "b", "r"));
    // A column of the claim's rows, qualified: the same column name as the pause table's.
    assertThat(
            this.<List<String>>inTx(
                dsl ->
                    dsl.select(ITEM_THING)
                        .from(ITEMS)
                        .where(PAUSES.notPaused(ITEM_THING))
                        .orderBy(ITEM_THING)
                        .fetch(org.jooq.Record1::value1)))
        .containsExactly("a", "c");
    // A bind value, as a single-name claim passes it.
    assertThat(is(dsl -> dsl.fetchExists(DSL.selectOne().where(PAUSES.notPaused(DSL.val("b"))))))
        .isFalse();
    assertThat(is(dsl -> dsl.fetchExists(DSL.selectOne().where(PAUSES.notPaused(DSL.val("a"))))))
        .isTrue();
    inTx(dsl -> PAUSES.resume(dsl, "b"));
    assertThat(
            this.<Integer>inTx(
                dsl ->
                    dsl.selectCount()
                        .from(ITEMS)
                        .where(PAUSES.notPaused(ITEM_THING))
                        .fetchOne(org.jooq.Record1::value1)))
        .isEqualTo(3);
  }

  @Test
  void badArgumentsAreRefusedBeforeAnythingIsSentAndTheCallersTransactionSurvives() {
    String tooLong = "k".repeat(Limits.MAX_KEY_BYTES + 1);
    Pauses noBlank = PAUSES.refusingBlankNames();
    List<String> names = new ArrayList<>();
    List<String> reasons = new ArrayList<>();
    inTx(
        dsl -> {
          dsl.execute("INSERT INTO pausesit.items VALUES ('before')");
          for (String bad : new String[] {null, "", "a\0b", tooLong}) {
            for (Pauses p : List.of(PAUSES, noBlank)) {
              names.add(refused(() -> p.pause(dsl, bad, "r")));
              names.add(refused(() -> p.resume(dsl, bad)));
              names.add(refused(() -> p.isPaused(dsl, bad)));
            }
          }
          names.add(refused(() -> noBlank.pause(dsl, "   ", "r")));
          names.add(refused(() -> noBlank.resume(dsl, "   ")));
          names.add(refused(() -> noBlank.isPaused(dsl, "   ")));
          reasons.add(refused(() -> PAUSES.pause(dsl, "k", "r\0")));
          reasons.add(
              refused(() -> PAUSES.pause(dsl, "k", "r".repeat(Limits.MAX_REASON_CHARS + 1))));
          // Nothing failed on the server: the transaction goes on and commits.
          return dsl.execute("INSERT INTO pausesit.items VALUES ('after')");
        });
    assertThat(names).hasSize(4 * 2 * 3 + 3).allMatch(m -> m.contains("thing"));
    assertThat(reasons).hasSize(2).allMatch(m -> m.contains("reason"));
    assertThat(db.queryLong("SELECT count(*) FROM pausesit.items")).isEqualTo(2);
    assertThat(db.queryLong("SELECT count(*) FROM pausesit.paused_things")).isZero();
    // Blank names are data unless refused.
    assertThat(is(dsl -> PAUSES.pause(dsl, "   ", null))).isTrue();
    assertThat(is(dsl -> PAUSES.isPaused(dsl, "   "))).isTrue();
  }

  @Test
  void theKitRefusesAMissingTableColumnOrArgumentName() {
    assertThatThrownBy(() -> Pauses.of(null, THING, "thing"))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Pauses.of(PAUSED, null, "thing"))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Pauses.of(PAUSED, THING, ""))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> PAUSES.notPaused(null)).isInstanceOf(NullPointerException.class);
  }

  /** The message of the IllegalArgumentException {@code call} throws. */
  private static String refused(Runnable call) {
    try {
      call.run();
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
    throw new AssertionError("not refused");
  }
}
