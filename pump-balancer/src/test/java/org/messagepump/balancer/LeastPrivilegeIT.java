package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.Pause;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * The grants of {@link BalancerOperations#grantStatements} are enough to run everything at run time
 * (issue 13): migrated by the owner, the whole workload (stores, pumps with and without
 * lockPartition, every result, parking and unparking, the reaper, hand-off with extend and confirm,
 * figures) runs as a role with only those grants, which cannot change the schema.
 */
@ExtendWith(PostgresExtension.class)
class LeastPrivilegeIT {

  private static final String SCHEMA = "dml_app";
  private static final String ROLE = "balancer_least_privilege";

  @Test
  void theWholeWorkloadRunsAsADmlOnlyRole(TestDatabase db) throws Exception {
    BalancerOperations.of(db.dataSource(), SCHEMA).migrate();
    db.createLoginRole(ROLE, "secret'pw");
    for (String grant : BalancerOperations.of(db.dataSource(), SCHEMA).grantStatements(ROLE)) {
      db.execute(grant);
    }
    DataSource app = db.newDataSource("dml-role", 8, ROLE, "secret'pw");

    Workload.run(app, SCHEMA, Workload.emptyKeyRow(db.dataSource(), SCHEMA));
    // The cluster-wide pause of a group (paused_groups) is DML of the role too.
    MessageBalancer paused = MessageBalancer.builder(app, "paused-g").schema(SCHEMA).build();
    assertThat(paused.operations().pauseGroup(paused.group(), "maintenance")).isTrue();
    assertThat(BalancerOperations.of(app, SCHEMA).pausedGroups())
        .extracting(Pause::name)
        .containsExactly("paused-g");
    assertThat(paused.operations().resumeGroup(paused.group())).isTrue();

    try (Connection c = app.getConnection()) {
      assertThatThrownBy(() -> c.createStatement().execute("CREATE TABLE dml_app.x (i int)"))
          .isInstanceOf(SQLException.class)
          .hasMessageContaining("permission denied");
      assertThatThrownBy(() -> c.createStatement().execute("DROP TABLE dml_app.messages"))
          .isInstanceOf(SQLException.class);
      assertThatThrownBy(() -> BalancerOperations.of(app, SCHEMA).migrate())
          .isInstanceOf(RuntimeException.class);
    }
  }
}
