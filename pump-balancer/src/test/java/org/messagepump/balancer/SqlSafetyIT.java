package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.StatementCapture;
import org.messagepump.testkit.TestDatabase;

/**
 * No data value is ever written into SQL text: every statement the balancer sends through a
 * representative workload with hostile values is captured, and none holds a literal but the code's
 * own constants.
 */
@ExtendWith(PostgresExtension.class)
class SqlSafetyIT {

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  @Test
  void noValueReachesTheSqlText(TestDatabase db) throws Exception {
    StatementCapture capture = StatementCapture.of(db.dataSource());
    Workload.run(
        capture.dataSource(), "balancer", Workload.emptyKeyRow(capture.target(), "balancer"));
    List<String> statements = capture.statements();
    assertThat(statements).hasSizeGreaterThan(20);
    // The literals of the code: the sequence name jOOQ writes into nextval('...'), and the field
    // date_part reads from the clock.
    Set<String> allowed = Set.of("'\"balancer\".\"rotation\"'", "'epoch'");
    assertThat(capture.statementsWithLiteralsOtherThan(allowed)).isEmpty();
    for (String sql : statements) {
      assertThat(sql).doesNotContain("gr'p").doesNotContain("pwned").doesNotContain("it's");
    }
    // The pre-rendered acquisition ran, its group bound.
    assertThat(statements)
        .anyMatch(s -> s.contains("for no key update skip locked") && s.contains("(select ?)"));
    // A second acquisition round ran, with its excluded keys bound as one text[] parameter.
    assertThat(statements)
        .anyMatch(s -> s.contains("not in (select \"x\".\"k\" from unnest(cast(? as text[]))"));
    assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE tablename = 'pwned'")).isZero();
  }
}
