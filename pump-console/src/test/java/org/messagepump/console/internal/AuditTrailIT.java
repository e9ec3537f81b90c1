package org.messagepump.console.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.console.ConsoleAudit;
import org.messagepump.testkit.PostgresExtension;

/** The audit table in its own schema: migrated once, paged newest first, pruned by age. */
@ExtendWith(PostgresExtension.class)
class AuditTrailIT {

  @Test
  void entriesArePagedNewestFirstAndDeletedPastTheirRetention(DataSource ds) throws Exception {
    assertThat(ConsoleAudit.migrate(ds, "ops_audit")).isEqualTo(1);
    assertThat(ConsoleAudit.migrate(ds, "ops_audit")).isZero();
    Audit audit = new Audit(ds, "ops_audit", Duration.ofDays(30));
    for (int i = 0; i < 5; i++) {
      audit.refused("op" + i, "127.0.0.1", "keys.unpark", List.of("k" + i), "refused 404");
    }
    List<Audit.Entry> first = audit.page(null, 3);
    assertThat(first).extracting(Audit.Entry::actor).containsExactly("op4", "op3", "op2");
    assertThat(audit.page(first.get(2).id(), 3))
        .extracting(Audit.Entry::actor)
        .containsExactly("op1", "op0");
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      st.executeUpdate(
          "UPDATE ops_audit.audit SET at = clock_timestamp() - interval '31 days'"
              + " WHERE actor IN ('op0', 'op1')");
    }
    audit.pruneNow();
    assertThat(audit.page(null, 10))
        .extracting(Audit.Entry::actor)
        .containsExactly("op4", "op3", "op2");
  }
}
