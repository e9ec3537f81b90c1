package org.messagepump.cli;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** The invariants the demo checks in the database at the end, each with what it found. */
final class DemoChecks {

  /** One invariant: its name, whether it held, and the figures behind it. */
  record Check(String name, boolean passed, String detail) {}

  private final List<Check> checks = new ArrayList<>();

  List<Check> checks() {
    return checks;
  }

  boolean allPassed() {
    return checks.stream().allMatch(Check::passed);
  }

  static DemoChecks run(DataSource ds, DemoScenario s, long deadLettersAdded) throws SQLException {
    DemoChecks result = new DemoChecks();
    long placed = s.orders - s.expectedDeclined();
    String like = s.run + "-%";
    try (Connection c = ds.getConnection()) {
      long[] view =
          longs(
              c,
              "SELECT count(*), count(DISTINCT order_id), coalesce(sum(amount), 0) FROM demo.orders_view"
                  + " WHERE order_id LIKE ?",
              like);
      result.add(
          "every placed order projected exactly once",
          view[0] == placed && view[1] == placed,
          view[0] + " rows, " + view[1] + " distinct, " + placed + " expected");
      long[] totals =
          longs(
              c,
              "SELECT coalesce(sum(total), 0), coalesce(sum(orders), 0) FROM demo.customer_totals WHERE run = ?",
              s.run);
      result.add(
          "own-checkpoint projection matches the read model",
          totals[0] == view[2] && totals[1] == placed,
          "total " + totals[0] + " vs " + view[2] + ", " + totals[1] + " orders");
      long[] sent =
          longs(
              c,
              "SELECT count(*), count(DISTINCT message_id), count(*) FILTER (WHERE via = 'gateway')"
                  + " FROM demo.notifications WHERE run = ?",
              s.run);
      result.add(
          "every notification sent exactly once",
          sent[0] == placed && sent[1] == placed,
          sent[0]
              + " sent, "
              + sent[1]
              + " distinct, "
              + sent[2]
              + " through the gateway hand-off");
      long[] inversions =
          longs(
              c,
              "SELECT count(*) FILTER (WHERE inverted) FROM (SELECT message_id < lag(message_id)"
                  + " OVER (PARTITION BY customer ORDER BY seq) AS inverted FROM demo.notifications"
                  + " WHERE run = ?) x",
              s.run);
      result.add(
          "per-customer order kept",
          inversions[0] == 0,
          inversions[0] + " notifications overtook an earlier one of their customer");
      result.add(
          "declined orders parked as dead letters",
          deadLettersAdded == s.expectedDeclined(),
          deadLettersAdded + " dead letters, " + s.expectedDeclined() + " expected");
    }
    return result;
  }

  private void add(String name, boolean passed, String detail) {
    checks.add(new Check(name, passed, detail));
  }

  private static long[] longs(Connection c, String sql, String param) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, param);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        long[] out = new long[rs.getMetaData().getColumnCount()];
        for (int i = 0; i < out.length; i++) {
          out[i] = rs.getLong(i + 1);
        }
        return out;
      }
    }
  }
}
