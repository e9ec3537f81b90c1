package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.Tx;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.Outcome;
import org.messagepump.core.spi.WakeSignal;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;
import org.postgresql.ds.PGSimpleDataSource;

@ExtendWith(PostgresExtension.class)
class WakeListenerIT {

  /** The tiny driver with a wake channel. */
  record Notified(TinyTableDriver inner) implements Driver {
    @Override
    public String name() {
      return "notified";
    }

    @Override
    public List<Delivery> acquire(Tx tx, int max) {
      return inner.acquire(tx, max);
    }

    @Override
    public Outcome handle(Tx tx, Delivery d) throws Exception {
      return inner.handle(tx, d);
    }

    @Override
    public void postpone(Tx tx, Delivery d, int failures, Duration delay) {
      inner.postpone(tx, d, failures, delay);
    }

    @Override
    public Optional<String> wakeChannel() {
      return Optional.of("tiny_work");
    }
  }

  @Test
  void aNotificationWakesAnIdlePumpLongBeforeItsPollInterval(TestDatabase db) throws Exception {
    db.execute(TinyTable.SCHEMA);
    CountDownLatch handled = new CountDownLatch(1);
    DataSource ds = db.dataSource();
    try (MessagePump pump =
        MessagePump.builder(ds)
            .name("listening")
            .driver(
                new Notified(
                    new TinyTableDriver(
                        (tx, id, body) -> {
                          handled.countDown();
                          return Outcome.HANDLED;
                        })))
            .workers(1)
            .pollInterval(Duration.ofSeconds(60))
            .build()) {
      pump.start();
      // Let the first (empty) poll pass and the listener start.
      await().atMost(Duration.ofSeconds(30)).until(() -> listening(db));
      Thread.sleep(200); // not for correctness: only so that the dispatcher is in its idle wait
      long t0 = System.nanoTime();
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("INSERT INTO work (body) VALUES ('wake up')");
        }
        WakeSignal.send(c, "tiny_work");
        WakeSignal.send(c, "tiny_work");
        c.commit();
      }
      assertThat(handled.await(20, TimeUnit.SECONDS)).isTrue();
      assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0)).isLessThan(20);
    }
    // The listener's connection went back to the pool unsubscribed: no idle pooled connection
    // keeps collecting notifications for whoever borrows it next.
    assertThat(listening(db)).isFalse();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_listening_channels()")) {
      rs.next();
      assertThat(rs.getLong(1)).isZero();
    }
  }

  @Test
  void withoutNotificationsTheIdlePumpWaitsForItsPoll(TestDatabase db) throws Exception {
    db.execute("DROP TABLE IF EXISTS work, work_parked");
    db.execute(TinyTable.SCHEMA);
    CountDownLatch handled = new CountDownLatch(1);
    try (MessagePump pump =
        MessagePump.builder(db.dataSource())
            .name("deaf")
            .driver(
                new Notified(
                    new TinyTableDriver(
                        (tx, id, body) -> {
                          handled.countDown();
                          return Outcome.HANDLED;
                        })))
            .workers(1)
            .notifications(false)
            .pollInterval(Duration.ofSeconds(60))
            .build()) {
      pump.start();
      Thread.sleep(500); // not for correctness: only so that the first poll has passed
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("INSERT INTO work (body) VALUES ('nobody listens')");
        }
        WakeSignal.send(c, "tiny_work");
        c.commit();
      }
      assertThat(handled.await(3, TimeUnit.SECONDS)).isFalse();
      assertThat(listening(db)).isFalse();
    }
  }

  @Test
  void aSeparateNotificationsDataSourceCarriesTheListen(TestDatabase db) throws Exception {
    db.execute("DROP TABLE IF EXISTS work, work_parked");
    db.execute(TinyTable.SCHEMA);
    CountDownLatch handled = new CountDownLatch(1);
    PGSimpleDataSource direct = new PGSimpleDataSource();
    direct.setURL(db.jdbcUrl());
    direct.setUser(db.server().user());
    direct.setPassword(db.server().password());
    direct.setApplicationName("direct-listen");
    try (MessagePump pump =
        MessagePump.builder(db.dataSource())
            .name("split")
            .driver(
                new Notified(
                    new TinyTableDriver(
                        (tx, id, body) -> {
                          handled.countDown();
                          return Outcome.HANDLED;
                        })))
            .workers(1)
            .notificationsDataSource(direct)
            .pollInterval(Duration.ofSeconds(60))
            .build()) {
      pump.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  db.queryLong(
                          "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'"
                              + " AND application_name = 'direct-listen'")
                      == 1);
      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("INSERT INTO work (body) VALUES ('wake through the direct connection')");
        }
        WakeSignal.send(c, "tiny_work");
        c.commit();
      }
      assertThat(handled.await(20, TimeUnit.SECONDS)).isTrue();
    }
    assertThatThrownBy(() -> MessagePump.builder(db.dataSource()).notificationsDataSource(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("notificationsDataSource");
  }

  private static boolean listening(TestDatabase db) {
    return db.queryLong(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                + " AND query LIKE 'LISTEN%'")
        > 0;
  }
}
