package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * With {@code standard_conforming_strings = off} a backslash escapes a quote inside a literal, so a
 * value written into SQL text could end it and run SQL: a partition key stored through storeMessage
 * once ran a CREATE TABLE this way. Every value is bound now; the workload's values round-trip
 * exactly and nothing runs.
 */
@ExtendWith(PostgresExtension.class)
class StandardConformingStringsOffIT {

  @Test
  void valuesRoundTripAndNothingRuns(TestDatabase db) throws Exception {
    db.execute("ALTER DATABASE \"" + db.name() + "\" SET standard_conforming_strings = off");
    DataSource ds = db.newDataSource("scs-off", 8);
    try (Connection c = ds.getConnection();
        ResultSet rs = c.createStatement().executeQuery("SHOW standard_conforming_strings")) {
      rs.next();
      assertThat(rs.getString(1)).isEqualTo("off");
    }
    BalancerOperations.of(ds).migrate();
    Workload.run(ds, "balancer", Workload.emptyKeyRow(ds, "balancer"));
    assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE tablename = 'pwned'")).isZero();
  }
}
