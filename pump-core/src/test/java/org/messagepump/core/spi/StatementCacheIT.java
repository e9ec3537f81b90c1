package org.messagepump.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Param;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

@ExtendWith(PostgresExtension.class)
class StatementCacheIT {

  private static final Table<Record> NOTES = DSL.table(DSL.name("cache_it", "notes"));
  private static final Field<Long> ID = DSL.field(DSL.name("id"), SQLDataType.BIGINT);
  private static final Field<String> BODY = DSL.field(DSL.name("body"), SQLDataType.CLOB);
  private static final Field<UUID> REF = DSL.field(DSL.name("ref"), SQLDataType.UUID);
  private static final Field<JSONB> META = DSL.field(DSL.name("meta"), SQLDataType.JSONB);
  private static final Field<Instant> AT = DSL.field(DSL.name("at"), SQLDataType.INSTANT);

  private static final Param<Long> P_ID = StatementCache.parameter("id", SQLDataType.BIGINT);
  private static final Param<String> P_BODY = StatementCache.parameter("body", SQLDataType.CLOB);

  private TestDatabase db;

  @BeforeEach
  void table(TestDatabase db) {
    this.db = db;
    db.execute("DROP SCHEMA IF EXISTS cache_it CASCADE");
    db.execute(
        "CREATE SCHEMA cache_it; CREATE TABLE cache_it.notes (id bigint PRIMARY KEY, body text,"
            + " ref uuid, meta jsonb, at timestamptz)");
  }

  private static StatementCache.Statement insert() {
    return StatementCache.render(
        dsl ->
            dsl.insertInto(NOTES, ID, BODY, REF, META, AT)
                .values(
                    P_ID,
                    P_BODY,
                    StatementCache.parameter("ref", SQLDataType.UUID),
                    StatementCache.parameter("meta", SQLDataType.JSONB),
                    StatementCache.parameter("at", SQLDataType.INSTANT)),
        "id",
        "body",
        "ref",
        "meta",
        "at");
  }

  @Test
  void oddTextIsBoundNeverWrittenIntoTheStatementAndComesBackUnchanged() throws Exception {
    String odd = "it's \"quoted\" '' ; DROP TABLE x; -- $$ \\ \u00e9 \u2603 ?";
    UUID ref = UUID.randomUUID();
    Instant at = Instant.parse("2026-01-02T03:04:05.123456Z");
    StatementCache.Statement insert = insert();
    assertThat(insert.sql()).doesNotContain("it's").contains("?");
    try (Connection c = db.dataSource().getConnection()) {
      assertThat(insert.executeUpdate(c, 1L, odd, ref, JSONB.valueOf("{\"k\": \"v'\"}"), at))
          .isEqualTo(1);
      assertThat(insert.executeUpdate(c, 2L, null, null, null, null)).isEqualTo(1);
      StatementCache<String> cache = new StatementCache<>(4);
      StatementCache.Statement byBody =
          cache.statement(
              "byBody",
              dsl ->
                  dsl.select(ID, REF, META.cast(SQLDataType.CLOB), AT)
                      .from(NOTES)
                      .where(BODY.eq(P_BODY))
                      .and(ID.ne(P_ID).or(BODY.eq(P_BODY))),
              "body",
              "id");
      assertThat(byBody.markers()).containsExactly(0, 1, 0);
      try (PreparedStatement ps = byBody.prepare(c, odd, 0L);
          ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getLong(1)).isEqualTo(1L);
        assertThat(rs.getObject(2, UUID.class)).isEqualTo(ref);
        assertThat(rs.getString(3)).isEqualTo("{\"k\": \"v'\"}");
        assertThat(rs.getObject(4, java.time.OffsetDateTime.class).toInstant()).isEqualTo(at);
        assertThat(rs.next()).isFalse();
      }
      assertThat(db.queryString("SELECT body FROM cache_it.notes WHERE id = 1")).isEqualTo(odd);
      assertThat(db.queryLong("SELECT count(*) FROM cache_it.notes WHERE id = 2 AND body IS NULL"))
          .isEqualTo(1);
    }
  }

  @Test
  void arraysAreBoundAsOneValueEach() throws Exception {
    UUID a = UUID.randomUUID();
    UUID b = UUID.randomUUID();
    try (Connection c = db.dataSource().getConnection()) {
      insert().executeUpdate(c, 1L, "x", a, null, null);
      insert().executeUpdate(c, 2L, "y", b, null, null);
      insert().executeUpdate(c, 3L, "z", UUID.randomUUID(), null, null);
      StatementCache.Statement some =
          StatementCache.render(
              dsl ->
                  dsl.select(ID)
                      .from(NOTES)
                      .where(
                          REF.eq(
                              DSL.any(StatementCache.parameter("refs", SQLDataType.UUID.array()))))
                      .and(
                          ID.eq(
                              DSL.any(StatementCache.parameter("ids", SQLDataType.BIGINT.array()))))
                      .and(
                          BODY.ne(
                              DSL.all(StatementCache.parameter("not", SQLDataType.CLOB.array()))))
                      .orderBy(ID),
              "refs",
              "ids",
              "not");
      List<Long> ids = new ArrayList<>();
      try (PreparedStatement ps =
              some.prepare(c, new UUID[] {a, b}, new Long[] {1L, 2L, 3L}, new String[] {"y"});
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
      assertThat(ids).containsExactly(1L);
    }
  }

  @Test
  void aStatementIsRenderedOncePerShapeAndTheCacheIsBounded() throws Exception {
    StatementCache<Integer> cache = new StatementCache<>(2);
    int[] builds = new int[1];
    for (int round = 0; round < 3; round++) {
      for (int limit = 1; limit <= 4; limit++) {
        int l = limit;
        cache.statement(
            limit,
            dsl -> {
              builds[0]++;
              return dsl.select(ID).from(NOTES).where(ID.gt(P_ID)).limit(DSL.inline(l));
            },
            "id");
      }
    }
    // Shapes 1 and 2 are kept (built once each); 3 and 4 are over the bound, built at each call.
    assertThat(cache.size()).isEqualTo(2);
    assertThat(builds[0]).isEqualTo(2 + 3 * 2);
    assertThat(
            cache
                .statement(
                    4,
                    dsl -> dsl.select(ID).from(NOTES).where(ID.gt(P_ID)).limit(DSL.inline(4)),
                    "id")
                .sql())
        .contains("4");
  }

  @Test
  void threadsAskingForOneShapeShareOneStatement() throws Exception {
    StatementCache<String> cache = new StatementCache<>(1);
    CountDownLatch start = new CountDownLatch(1);
    ConcurrentLinkedQueue<StatementCache.Statement> seen = new ConcurrentLinkedQueue<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  start.await();
                  for (int n = 0; n < 100; n++) {
                    seen.add(
                        cache.statement(
                            "one", dsl -> dsl.select(ID).from(NOTES).where(ID.eq(P_ID)), "id"));
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              });
      t.start();
      threads.add(t);
    }
    start.countDown();
    for (Thread t : threads) {
      t.join();
    }
    assertThat(seen).hasSize(800);
    assertThat(cache.size()).isEqualTo(1);
    // After the first statement was kept, every later call returned it.
    StatementCache.Statement kept = cache.statement("one", dsl -> null, "id");
    assertThat(seen.stream().filter(s -> s != kept).count()).isLessThan(8);
  }

  @Test
  void aShapeMayUseSomeOfTheOfferedParametersAndReportsThoseItUsesInOrder() throws Exception {
    try (Connection c = db.dataSource().getConnection()) {
      for (long id = 1; id <= 3; id++) {
        insert().executeUpdate(c, id, "b" + id, null, null, null);
      }
      StatementCache<Boolean> cache = new StatementCache<>(2);
      String[] offered = {"id", "body", "low"};
      Param<Long> low = StatementCache.parameter("low", SQLDataType.BIGINT);
      StatementCache.Statement[] shapes = new StatementCache.Statement[2];
      for (boolean both : new boolean[] {false, true}) {
        StatementCache.Statement s =
            cache.statementOfSome(
                both,
                dsl ->
                    dsl.select(ID)
                        .from(NOTES)
                        .where(ID.gt(low))
                        .and(both ? BODY.ne(P_BODY).or(ID.eq(low)) : DSL.noCondition())
                        .orderBy(ID),
                offered);
        assertThat(s.parameters())
            .containsExactlyElementsOf(both ? List.of("body", "low") : List.of("low"));
        shapes[both ? 1 : 0] = s;
      }
      StatementCache.Statement twoOfThree = shapes[1];
      assertThat(twoOfThree.markers()).containsExactly(1, 0, 1);
      // Bound one parameter at a time, the bigint unboxed.
      List<Long> ids = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(twoOfThree.sql())) {
        twoOfThree.bindParameter(ps, 0, "b2");
        twoOfThree.bindLong(ps, 1, 1L);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            ids.add(rs.getLong(1));
          }
        }
        assertThatThrownBy(() -> twoOfThree.bindLong(ps, 0, 1L))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("parameter 'body'");
        assertThatThrownBy(() -> twoOfThree.bindParameter(ps, 1, "1"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("parameter 'low'");
        assertThatThrownBy(() -> twoOfThree.bindParameter(ps, 2, "x"))
            .isInstanceOf(IllegalArgumentException.class);
      }
      assertThat(ids).containsExactly(3L);
    }
    // Still no parameter that was not offered, and no unnamed value.
    StatementCache<String> other = new StatementCache<>(1);
    assertThatThrownBy(
            () ->
                other.statementOfSome(
                    "id", dsl -> dsl.select(ID).from(NOTES).where(ID.eq(P_ID)), "low"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("parameter 'id', not one of [low]");
    assertThatThrownBy(
            () ->
                other.statementOfSome(
                    "seven", dsl -> dsl.select(ID).from(NOTES).where(ID.eq(7L)), "low"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("unnamed value");
    assertThat(other.size()).isZero();
  }

  @Test
  void aStatementMustBindExactlyItsNamedParameters() {
    assertThatThrownBy(
            () -> StatementCache.render(dsl -> dsl.select(ID).from(NOTES).where(ID.eq(7L)), "id"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("unnamed value");
    assertThatThrownBy(
            () ->
                StatementCache.render(
                    dsl -> dsl.select(ID).from(NOTES).where(ID.eq(P_ID)), "id", "body"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("does not use parameter 'body'");
    assertThatThrownBy(
            () -> StatementCache.render(dsl -> dsl.select(ID).from(NOTES).where(ID.eq(P_ID))))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("parameter 'id'");
  }

  @Test
  void valuesOfTheWrongNumberOrTypeAreRefusedBeforeAnythingIsSent() throws Exception {
    StatementCache.Statement s =
        StatementCache.render(dsl -> dsl.select(ID).from(NOTES).where(ID.eq(P_ID)), "id");
    try (Connection c = db.dataSource().getConnection()) {
      assertThatThrownBy(() -> s.prepare(c)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> s.prepare(c, "1"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("parameter 'id'");
    }
    assertThatThrownBy(() -> new StatementCache<>(0)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void rowsOfParallelArraysAreOneTextForAnyNumberOfRows() throws Exception {
    Table<Record> u =
        StatementCache.rows(
            true,
            "u",
            List.of("id", "body", "n"),
            StatementCache.parameter("ids", SQLDataType.BIGINT.array()),
            StatementCache.parameter("bodies", SQLDataType.CLOB.array()));
    StatementCache.Statement insert =
        StatementCache.render(
            dsl ->
                dsl.insertInto(NOTES, ID, BODY)
                    .select(
                        DSL.select(
                                DSL.field(DSL.name("u", "id"), Long.class),
                                DSL.field(DSL.name("u", "body"), String.class)
                                    .concat(
                                        DSL.field(DSL.name("u", "n"), Long.class)
                                            .cast(SQLDataType.CLOB)))
                            .from(u)),
            "ids",
            "bodies");
    assertThat(insert.sql())
        .contains(
            "unnest(cast(? as bigint[]), cast(? as text[])) with ordinality as"
                + " \"u\"(\"id\", \"body\", \"n\")");
    try (Connection c = db.dataSource().getConnection()) {
      assertThat(insert.executeUpdate(c, new Long[] {1L, 2L}, new String[] {"a'", null}))
          .isEqualTo(2);
      assertThat(insert.executeUpdate(c, new Long[] {3L}, new String[] {"c"})).isEqualTo(1);
      try (PreparedStatement ps =
              c.prepareStatement("SELECT id, body FROM cache_it.notes ORDER BY id");
          ResultSet rs = ps.executeQuery()) {
        List<String> rows = new ArrayList<>();
        while (rs.next()) {
          rows.add(rs.getLong(1) + "=" + rs.getString(2));
        }
        assertThat(rows).containsExactly("1=a'1", "2=null", "3=c1");
      }
    }
    assertThatThrownBy(
            () -> StatementCache.rows(false, "u", List.of("a", "b"), DSL.val(new Long[0])))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("2 columns for 1 arrays");
  }
}
