package org.messagepump.balancer;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.messagepump.core.MessagePump;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;

/**
 * Drives a {@link Driver} by hand, the way the pump does, so tests can hold transactions open at
 * chosen points.
 */
final class Steps {

  private Steps() {}

  /** An open transaction with the deliveries it acquired. */
  record Open(Connection connection, Tx tx, List<Delivery> deliveries) implements AutoCloseable {
    Delivery only() {
      if (deliveries.size() != 1) {
        throw new AssertionError("expected one delivery, got " + deliveries.size());
      }
      return deliveries.get(0);
    }

    long messageId() {
      return Long.parseLong(only().messageId());
    }

    String key() {
      return only().envelope().headers().get(BalancerDriver.PARTITION_KEY_HEADER);
    }

    /**
     * Handles every delivery as the pump's DeliveryRunner does, completion included (no commit).
     */
    void handleAll(Driver driver) throws Exception {
      List<Delivery> handled = new java.util.ArrayList<>();
      for (Delivery d : deliveries) {
        var sp = connection.setSavepoint();
        Outcome o;
        try {
          o = driver.handle(tx, d);
        } catch (Exception e) {
          o = Outcome.failed(e);
        }
        if (o instanceof Outcome.Handled) {
          connection.releaseSavepoint(sp);
          handled.add(d);
        } else {
          connection.rollback(sp);
          if (o instanceof Outcome.Busy) {
            driver.postpone(tx, d, d.failures(), Duration.ofMillis(1));
          } else {
            driver.postpone(tx, d, d.failures() + 1, Duration.ofMillis(1));
          }
        }
      }
      if (!handled.isEmpty()) {
        driver.completed(tx, handled);
      }
    }

    void commit() throws SQLException {
      connection.commit();
    }

    void rollback() throws SQLException {
      connection.rollback();
    }

    @Override
    public void close() throws SQLException {
      try {
        if (!connection.isClosed()) {
          connection.rollback();
        }
      } finally {
        connection.close();
      }
    }
  }

  /** Opens a transaction and acquires up to {@code max} deliveries in it. */
  static Open acquire(DataSource ds, Driver driver, int max) throws SQLException {
    Connection c = ds.getConnection();
    c.setAutoCommit(false);
    Tx tx = Tx.of(c);
    return new Open(c, tx, driver.acquire(tx, max));
  }

  /** One whole pump step: acquire one, handle, commit. Returns the delivered id or -1. */
  static long step(DataSource ds, Driver driver) throws Exception {
    try (Open o = acquire(ds, driver, 1)) {
      if (o.deliveries().isEmpty()) {
        o.commit();
        return -1;
      }
      long id = o.messageId();
      o.handleAll(driver);
      o.commit();
      return id;
    }
  }

  /** A pump over {@code driver} with quick polling. */
  static MessagePump pump(DataSource ds, String name, Driver driver, int workers) {
    return pump(ds, name, driver, workers, 1);
  }

  /** A pump over {@code driver} with quick polling and {@code batchSize} deliveries per tx. */
  static MessagePump pump(DataSource ds, String name, Driver driver, int workers, int batchSize) {
    return MessagePump.builder(ds)
        .name(name)
        .driver(driver)
        .workers(workers)
        .batchSize(batchSize)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(20), Duration.ofMillis(200))
        .shutdownGrace(Duration.ofSeconds(5))
        .build();
  }
}
