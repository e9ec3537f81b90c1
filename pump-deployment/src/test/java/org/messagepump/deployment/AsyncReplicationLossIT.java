package org.messagepump.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.messagepump.chaos.kit.ChaosReport;

/**
 * What asynchronous replication loses: writers commit as fast as they can and remember, in this
 * JVM, every id whose commit was acknowledged; the primary node is killed (keeper and postmaster)
 * and the monitor promotes the standby. Acknowledged ids missing on the new primary are lost. The
 * same run with synchronous replication must lose none.
 */
class AsyncReplicationLossIT {

  private static final int WRITERS = 8;

  @BeforeAll
  static void startCluster() {
    Cluster.start();
  }

  @AfterAll
  static void synchronousAgain() {
    Cluster.run("sync", "on");
  }

  @Test
  void synchronousReplicationLosesNothingAcknowledged() throws Exception {
    long lost = killUnderWrites("on", "ha-sync-loss");
    assertThat(lost).as("acknowledged commits lost with synchronous replication").isZero();
  }

  @Test
  void asynchronousReplicationMayLoseAcknowledgedCommits() throws Exception {
    long lost = killUnderWrites("off", "ha-async-loss");
    // Not asserted to be > 0: on loopback the standby is often level with the primary. The
    // figure goes into the report and docs/deployment.md.
    assertThat(lost).isGreaterThanOrEqualTo(0);
  }

  private static long killUnderWrites(String sync, String scenario) throws Exception {
    Cluster.run("wait-healthy", "300");
    String mode = Cluster.run("sync", sync);
    ConcurrentLinkedQueue<Long> acknowledged = new ConcurrentLinkedQueue<>();
    AtomicBoolean writing = new AtomicBoolean(true);
    List<Thread> writers = new ArrayList<>();
    Instant promoted;
    String killed = null;
    int before;
    try (HikariDataSource ds = Cluster.pool(Cluster.multiHostUrl(), "loss-writers", WRITERS + 1)) {
      try (Connection c = ds.getConnection()) {
        c.createStatement()
            .execute(
                "CREATE SCHEMA IF NOT EXISTS deploy;"
                    + " CREATE TABLE IF NOT EXISTS deploy.acked (id bigint PRIMARY KEY,"
                    + " pad text NOT NULL); TRUNCATE deploy.acked");
      }
      for (int t = 0; t < WRITERS; t++) {
        long offset = t;
        Thread w =
            new Thread(
                () -> {
                  long n = offset;
                  while (writing.get()) {
                    try (Connection c = ds.getConnection();
                        PreparedStatement ps =
                            c.prepareStatement(
                                "INSERT INTO deploy.acked (id, pad) VALUES (?, repeat('x', 200))")) {
                      ps.setLong(1, n);
                      ps.executeUpdate(); // autocommit: returns once the commit is acknowledged
                      acknowledged.add(n);
                    } catch (SQLException e) {
                      Cluster.sleep(20);
                    }
                    n += WRITERS;
                  }
                },
                "loss-writer-" + t);
        w.start();
        writers.add(w);
      }
      Cluster.sleep(3_000);
      before = Cluster.primaryPort();
      long t0 = System.nanoTime();
      killed = Cluster.run("kill-node");
      promoted = Cluster.awaitPrimary(Duration.ofMinutes(3).toMillis(), before);
      long faultToPrimary = (System.nanoTime() - t0) / 1_000_000;
      writing.set(false);
      for (Thread w : writers) {
        w.join(30_000);
      }
      assertThat(promoted).as("the standby was promoted").isNotNull();
      // The pool may need a few tries before pgjdbc sees the new primary (hostRecheckSeconds).
      long[] present = {-1};
      await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(
              () -> {
                try (Connection c = ds.getConnection();
                    PreparedStatement ps =
                        c.prepareStatement(
                            "SELECT count(*) FROM deploy.acked WHERE id = ANY (?)")) {
                  ps.setArray(1, c.createArrayOf("bigint", acknowledged.toArray()));
                  try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    present[0] = rs.getLong(1);
                  }
                }
                return true;
              });
      long lost = acknowledged.size() - present[0];
      ChaosReport.of(scenario)
          .put("replication", mode)
          .put("writers", WRITERS)
          .put("acknowledged", acknowledged.size())
          .put("lost", lost)
          .put("faultToPrimaryMs", faultToPrimary)
          .write();
      return lost;
    } finally {
      writing.set(false);
      if (killed != null) {
        // The killed node rejoins as the standby, whatever the outcome.
        Cluster.run("restart-node", killed.substring("node".length()));
        Cluster.run("wait-healthy", "300");
      }
    }
  }
}
