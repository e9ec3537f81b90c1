package org.messagepump.commands;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;
import javax.sql.DataSource;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;

/** Test commands, their codec and small database helpers. */
final class Fixtures {

  record PlaceOrder(String orderId) {}

  record ShipOrder(String orderId) {}

  record ChargeCard(String orderId, long cents) {}

  record Unregistered(String x) {}

  static final MessageTypes TYPES =
      MessageTypes.builder()
          .register(PlaceOrder.class, "orders.PlaceOrder")
          .register(ShipOrder.class, "orders.ShipOrder")
          .register(ChargeCard.class, "billing.ChargeCard")
          .build();

  static final JsonMessageCodec CODEC = JsonMessageCodec.of(TYPES);

  private Fixtures() {}

  static CommandQueue queue(DataSource ds) {
    CommandOperations.of(ds).migrate();
    return CommandQueue.create(ds, CODEC);
  }

  static long count(DataSource ds, String sql, Object... args) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setObject(i + 1, args[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  static void execute(DataSource ds, String sql) {
    try (Connection c = ds.getConnection();
        var s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  static long pending(DataSource ds) {
    return count(ds, "SELECT count(*) FROM commandqueue.commands");
  }

  static int failures(DataSource ds, UUID id) {
    return (int) count(ds, "SELECT failures FROM commandqueue.commands WHERE message_id = ?", id);
  }
}
