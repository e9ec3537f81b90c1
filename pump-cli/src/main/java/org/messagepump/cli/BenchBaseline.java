package org.messagepump.cli;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * The ceiling for one transaction per delivery: plain JDBC, one connection per worker, each
 * transaction selects the oldest row {@code FOR UPDATE SKIP LOCKED}, deletes it and commits.
 */
final class BenchBaseline {

  private BenchBaseline() {}

  /** Deliveries per second for {@code rows} rows and {@code workers} connections. */
  static double skipLocked(DataSource ds, int workers, int rows) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA IF NOT EXISTS bench");
      s.execute("DROP TABLE IF EXISTS bench.baseline");
      s.execute("CREATE TABLE bench.baseline (id bigserial PRIMARY KEY, payload bytea NOT NULL)");
      s.execute(
          "INSERT INTO bench.baseline (payload) SELECT convert_to('{\"n\":' || g || '}', 'UTF8')"
              + " FROM generate_series(1, "
              + rows
              + ") g");
      s.execute("ANALYZE bench.baseline");
    }
    AtomicLong done = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    List<Exception> errors = new ArrayList<>();
    long start = System.nanoTime();
    for (int w = 0; w < workers; w++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  drain(ds, done);
                } catch (Exception e) {
                  synchronized (errors) {
                    errors.add(e);
                  }
                }
              },
              "bench-baseline-" + w);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    if (!errors.isEmpty()) {
      throw errors.get(0);
    }
    return done.get() / seconds;
  }

  private static void drain(DataSource ds, AtomicLong done) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement select =
            c.prepareStatement(
                "SELECT id, payload FROM bench.baseline ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED");
        PreparedStatement delete = c.prepareStatement("DELETE FROM bench.baseline WHERE id = ?")) {
      c.setAutoCommit(false);
      while (true) {
        long id;
        try (ResultSet rs = select.executeQuery()) {
          if (!rs.next()) {
            c.commit();
            return;
          }
          id = rs.getLong(1);
          rs.getBytes(2);
        }
        delete.setLong(1, id);
        delete.executeUpdate();
        c.commit();
        done.incrementAndGet();
      }
    }
  }
}
