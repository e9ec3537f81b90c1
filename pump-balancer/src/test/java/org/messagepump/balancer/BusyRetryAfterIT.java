package org.messagepump.balancer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.balancer.testing.BalancerFixture;
import org.messagepump.core.BusyException;
import org.messagepump.core.engine.PumpTester;
import org.messagepump.testkit.PostgresExtension;

/**
 * {@link BusyException} with a retry-after, through the pump's real runner ({@link PumpTester}).
 */
@ExtendWith(PostgresExtension.class)
class BusyRetryAfterIT {

  @RegisterExtension static final BalancerFixture BALANCER = BalancerFixture.create();

  @Test
  void busyWithRetryAfterPostponesTheKeyByThatDelayWithoutAFailure(DataSource ds) throws Exception {
    MessageBalancer b = MessageBalancer.create(ds, "retry-after");
    b.storeMessage("k", "x".getBytes(StandardCharsets.UTF_8));
    BalancerDriver driver =
        b.driver(
            BalancedHandlers.builder()
                .on(
                    (m, ctx) -> {
                      throw new BusyException("downstream says later", Duration.ofSeconds(20));
                    })
                .build());
    PumpTester tester =
        PumpTester.builder(ds, driver)
            .maxFailures(1)
            .backoff(Duration.ofMillis(10), Duration.ofMinutes(1))
            .build();
    List<PumpTester.Result> r = tester.runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.BUSY);
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT failures, parked_at IS NULL,"
                    + " extract(epoch FROM resume_at - clock_timestamp())"
                    + " FROM "
                    + BalancerOperations.DEFAULT_SCHEMA
                    + ".partitions WHERE partition_group = ? AND partition_key = ?")) {
      ps.setString(1, "retry-after");
      ps.setString(2, "k");
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getInt(1)).isZero();
        assertThat(rs.getBoolean(2)).isTrue();
        assertThat(rs.getDouble(3)).isBetween(18.0, 20.5);
      }
    }
    assertThat(tester.runOnce()).isEmpty(); // not due before its retry-after
  }
}
