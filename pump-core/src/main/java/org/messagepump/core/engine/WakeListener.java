package org.messagepump.core.engine;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.messagepump.core.Backoff;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listens on the driver's NOTIFY channel on one dedicated connection and wakes the dispatcher when
 * a producer signals. An accelerator only: when the connection fails it logs once, backs off and
 * tries again, and the pump keeps polling meanwhile.
 */
final class WakeListener implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(LogText.LOGGER);
  private static final int WAIT_MILLIS = 500;

  private final String pumpName;
  private final DataSource dataSource;
  private final String channel;
  private final Dispatcher dispatcher;
  private final Backoff backoff;
  private volatile boolean running = true;
  private volatile Connection connection;

  WakeListener(
      String pumpName,
      DataSource dataSource,
      String channel,
      Dispatcher dispatcher,
      Backoff backoff) {
    this.pumpName = pumpName;
    this.dataSource = dataSource;
    this.channel = channel;
    this.dispatcher = dispatcher;
    this.backoff = backoff;
  }

  @Override
  public void run() {
    int failures = 0;
    while (running) {
      try (Connection c = dataSource.getConnection()) {
        connection = c;
        c.setAutoCommit(true);
        PGConnection pg = c.unwrap(PGConnection.class);
        try (Statement s = c.createStatement()) {
          // The channel is an identifier: quote it (doubling quotes) since LISTEN takes no bind
          // value.
          s.execute("LISTEN \"" + channel.replace("\"", "\"\"") + "\"");
        }
        if (failures > 0) {
          log.info("{}: listening on '{}' again", pumpName, channel);
        }
        failures = 0;
        dispatcher.wake(); // work may have arrived while not listening
        try {
          while (running) {
            PGNotification[] notes = pg.getNotifications(WAIT_MILLIS);
            if (notes != null && notes.length > 0) {
              dispatcher.wake();
            }
          }
        } finally {
          unlisten(c, pg);
        }
      } catch (SQLException | RuntimeException e) {
        if (!running) {
          break;
        }
        if (failures++ == 0) {
          log.warn(
              "{}: listening on '{}' failed, polling only until it works again: {}",
              pumpName,
              channel,
              e.getMessage());
        }
        sleep(backoff.delay(failures, ThreadLocalRandom.current()));
      } finally {
        connection = null;
      }
    }
  }

  /**
   * Stops listening before the connection goes back to its pool, and drops what was received: a
   * pooled connection still subscribed would collect a notification per producer transaction, for
   * whoever borrows it next, without end. Best effort: a broken connection is evicted anyway.
   */
  private static void unlisten(Connection c, PGConnection pg) {
    try (Statement s = c.createStatement()) {
      s.execute("UNLISTEN *");
      pg.getNotifications();
    } catch (SQLException | RuntimeException e) {
      // the connection is broken: its pool evicts it, with its subscription
    }
  }

  private void sleep(Duration d) {
    try {
      TimeUnit.NANOSECONDS.sleep(d.toNanos());
    } catch (InterruptedException e) {
      running = false;
    }
  }

  void stop() {
    running = false;
  }
}
