package org.messagepump.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The schema is created once for the class and its tables are empty at the start of every test,
 * except a Flyway history; the test's own tables are created once and emptied too.
 */
@ExtendWith(PostgresExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FreshTablesIT {

  private static final AtomicInteger SETUPS = new AtomicInteger();

  @RegisterExtension
  static final FreshTables TABLES =
      FreshTables.schema(
              "fresh_a",
              (ds, schema) -> {
                SETUPS.incrementAndGet();
                // A name the server has to quote, and a stand-in for a driver's Flyway history.
                execute(
                    ds,
                    "CREATE SCHEMA fresh_a; CREATE TABLE fresh_a.items (n int);"
                        + " CREATE TABLE fresh_a.\"Odd Name\" (n int);"
                        + " CREATE TABLE fresh_a.my_history (installed_rank int, version text);"
                        + " INSERT INTO fresh_a.my_history VALUES (1, '1')");
              })
          .andSchema("fresh_b", (ds, schema) -> execute(ds, "CREATE SCHEMA fresh_b"))
          .table("public.handled", "CREATE TABLE handled (n int)");

  private static void execute(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  @Test
  @Order(1)
  void aTestWritesRows(TestDatabase db) {
    db.execute("CREATE TABLE fresh_b.later (n int)");
    db.execute("INSERT INTO fresh_a.items VALUES (1), (2)");
    db.execute("INSERT INTO fresh_a.\"Odd Name\" VALUES (1)");
    db.execute("INSERT INTO fresh_b.later VALUES (1)");
    db.execute("INSERT INTO handled VALUES (1)");
    assertThat(TABLES.database()).isSameAs(db);
    assertThat(TABLES.dataSource()).isSameAs(db.dataSource());
  }

  @Test
  @Order(2)
  void theNextTestFindsThemEmptyAndTheHistoryKept(TestDatabase db) {
    assertThat(db.queryLong("SELECT count(*) FROM fresh_a.items")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM fresh_a.\"Odd Name\"")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM fresh_b.later")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM handled")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM fresh_a.my_history")).isOne();
    assertThat(SETUPS.get()).isOne();
  }

  @Test
  @Order(3)
  void emptyEmptiesThemWithinATest(TestDatabase db) {
    db.execute("INSERT INTO fresh_a.items VALUES (1)");
    db.execute("INSERT INTO handled VALUES (1)");

    TABLES.empty();

    assertThat(db.queryLong("SELECT count(*) FROM fresh_a.items")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM handled")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM fresh_a.my_history")).isOne();
  }

  @Test
  void namesAreCheckedBeforeAnythingRuns() {
    assertThatThrownBy(() -> FreshTables.schema(" ", (ds, s) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema");
    assertThatThrownBy(() -> TABLES.table("", "CREATE TABLE x (n int)"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("table");
    assertThatThrownBy(() -> TABLES.table("x", " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("createSql");
    assertThatThrownBy(() -> FreshTables.schema("s", null))
        .isInstanceOf(NullPointerException.class);
  }
}
