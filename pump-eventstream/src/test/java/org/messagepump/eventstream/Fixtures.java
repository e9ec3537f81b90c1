package org.messagepump.eventstream;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Tx;

/** Test events, the codec and small transaction helpers. */
final class Fixtures {

  record OrderPlaced(String orderId, int n) {}

  record OrderShipped(String orderId) {}

  record Noise(int n) {}

  record Unregistered(int n) {}

  static final MessageCodec CODEC =
      JsonMessageCodec.of(
          MessageTypes.builder()
              .register(OrderPlaced.class, "test.OrderPlaced")
              .register(OrderShipped.class, "test.OrderShipped")
              .register(Noise.class, "test.Noise")
              .build());

  private Fixtures() {}

  /** Runs {@code work} in a transaction that commits. */
  static <T> T inTx(DataSource ds, Function<Tx, T> work) {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try {
        T result = work.apply(Tx.of(c));
        c.commit();
        return result;
      } catch (RuntimeException | Error e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Runs a query with bound arguments whose first column of the first row is a number. */
  static long queryLong(DataSource ds, String sql, Object... args) {
    try (Connection c = ds.getConnection();
        var ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setObject(i + 1, args[i]);
      }
      try (var rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Runs a query with bound arguments and returns its first column as strings. */
  static java.util.List<String> queryStrings(DataSource ds, String sql, Object... args) {
    try (Connection c = ds.getConnection();
        var ps = c.prepareStatement(sql)) {
      for (int i = 0; i < args.length; i++) {
        ps.setObject(i + 1, args[i]);
      }
      java.util.List<String> out = new java.util.ArrayList<>();
      try (var rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** An open transaction the test commits or rolls back itself. */
  static final class OpenTx implements AutoCloseable {
    final Connection connection;
    final Tx tx;

    OpenTx(DataSource ds) throws SQLException {
      connection = ds.getConnection();
      connection.setAutoCommit(false);
      tx = Tx.of(connection);
    }

    void commit() throws SQLException {
      connection.commit();
    }

    @Override
    public void close() throws SQLException {
      try {
        connection.rollback();
      } finally {
        connection.close();
      }
    }
  }
}
