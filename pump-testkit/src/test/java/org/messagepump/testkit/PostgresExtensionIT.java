package org.messagepump.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(PostgresExtension.class)
class PostgresExtensionIT {

  @Test
  void givesAFreshDatabaseOnARealServer(DataSource dataSource, TestDatabase db) throws Exception {
    assertThat(db.name()).startsWith("pump_test_");
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT current_database(), current_setting('server_version_num')::int")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).isEqualTo(db.name());
      assertThat(rs.getInt(2)).isGreaterThanOrEqualTo(120000);
    }
    assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")).isZero();
  }

  @Test
  void theSameDatabaseIsSharedWithinTheClass(TestDatabase db) {
    db.execute("CREATE TABLE IF NOT EXISTS shared_marker (x int)");
    assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE tablename = 'shared_marker'"))
        .isOne();
  }

  @Test
  void extraPoolsCarryTheirApplicationNameAndCanBeTerminated(TestDatabase db) throws Exception {
    HikariDataSource pool = db.newDataSource("victim-app", 2);
    try (Connection c = pool.getConnection()) {
      assertThat(db.terminateBackends("victim-app")).isEqualTo(1);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT 1");
        throw new AssertionError("the terminated connection still worked");
      } catch (java.sql.SQLException expected) {
        assertThat(expected.getSQLState()).startsWith("57P");
      }
    } catch (java.sql.SQLException closing) {
      // closing a terminated connection may fail too
    }
    try (Connection c = pool.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      assertThat(rs.next()).isTrue();
    }
  }
}
