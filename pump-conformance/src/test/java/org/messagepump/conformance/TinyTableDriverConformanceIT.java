package org.messagepump.conformance;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.Driver;
import org.messagepump.testkit.TestDatabase;

/**
 * The kit run against the README's example driver: the smallest driver that passes it, and the
 * example a driver author starts from.
 */
class TinyTableDriverConformanceIT extends DriverConformance {

  @Override
  protected void prepare(TestDatabase db) {
    if (db.queryLong("SELECT count(*) FROM pg_tables WHERE tablename = 'work'") == 0) {
      db.execute(TinyTable.SCHEMA);
    }
    db.execute("TRUNCATE work, work_parked");
  }

  @Override
  protected Driver driver(TestDatabase db, Behaviour behaviour) {
    // The example's handler gets no attempt: read the row's failure count in the delivery's tx.
    return new TinyTableDriver(
        (tx, id, body) -> {
          int failures;
          try (PreparedStatement ps =
              tx.connection().prepareStatement("SELECT failures FROM work WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              failures = rs.getInt(1);
            }
          }
          String messageId = Long.toString(id);
          return behaviour.decide(messageId, failures + 1).outcome(messageId);
        });
  }

  @Override
  protected String produce(TestDatabase db, String key) throws Exception {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO work (body) VALUES (?) RETURNING id")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return Long.toString(rs.getLong(1));
      }
    }
  }

  @Override
  protected long remaining(TestDatabase db) {
    return db.queryLong("SELECT count(*) FROM work");
  }

  @Override
  protected long parked(TestDatabase db) {
    return db.queryLong("SELECT count(*) FROM work_parked");
  }

  @Override
  protected boolean parks() {
    return true;
  }

  @Override
  protected boolean orderedPerKey() {
    return false;
  }
}
