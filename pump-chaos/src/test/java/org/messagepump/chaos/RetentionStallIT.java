package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.CommandRetention;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.testkit.PostgresExtension;

/**
 * Purging 1,000,000 expired idempotency keys while a thread enqueues continuously: the longest
 * enqueue is recorded before and during the purge (the retention job's defaults: batches of 1,000,
 * 50 ms apart). One enqueue in ten uses a key among those being purged, so it meets the purge's row
 * locks. The figures go to docs/commands.md ("Retention"). Full chaos suite only (-Pchaos): loading
 * the keys and purging them take about a minute.
 */
@Tag("chaos")
@ExtendWith(PostgresExtension.class)
class RetentionStallIT {

  private static final String SCHEMA = "retention_stall";
  private static final int KEYS = 1_000_000;
  private static final String TYPE = "stall.Probe";
  private static final byte[] BODY = "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  /** The product's bound: no enqueue waits longer than this on the purge. */
  private static final Duration BOUND = Duration.ofMillis(100);

  @Test
  void purgingAMillionExpiredKeysNeverStallsEnqueueBeyondTheBound(DataSource ds) throws Exception {
    CommandOperations.of(ds, SCHEMA).migrate();
    CommandQueue queue =
        CommandQueue.builder(ds)
            .codec(JsonMessageCodec.of(MessageTypes.builder().build()))
            .schema(SCHEMA)
            .build();
    try (Connection c = ds.getConnection();
        PreparedStatement insert =
            c.prepareStatement(
                "INSERT INTO retention_stall.idempotency_keys"
                    + " (idempotency_key, message_id, expires_at)"
                    + " SELECT 'expired-' || i, gen_random_uuid(),"
                    + " clock_timestamp() - interval '1 day' FROM generate_series(?, ?) i");
        Statement s = c.createStatement()) {
      for (int from = 1; from <= KEYS; from += 200_000) {
        insert.setInt(1, from);
        insert.setInt(2, from + 199_999);
        insert.execute();
      }
      s.execute("VACUUM ANALYZE retention_stall.idempotency_keys");
    }

    AtomicBoolean stop = new AtomicBoolean();
    AtomicBoolean purging = new AtomicBoolean();
    AtomicLong maxBefore = new AtomicLong();
    AtomicLong maxDuring = new AtomicLong();
    AtomicLong enqueuesDuring = new AtomicLong();
    AtomicLong atTheFront = new AtomicLong();
    AtomicLong lockTimeouts = new AtomicLong();
    AtomicLong otherErrors = new AtomicLong();
    Thread enqueuer =
        new Thread(
            () -> {
              long i = 0;
              while (!stop.get()) {
                i++;
                boolean front = i % 10 == 0;
                String key = front ? oldestExpiredKey(ds) : "fresh-" + i;
                if (key == null) {
                  key = "fresh-" + i;
                  front = false;
                }
                boolean during = purging.get();
                long began = System.nanoTime();
                try (Connection c = ds.getConnection()) {
                  c.setAutoCommit(false);
                  try (Statement s = c.createStatement()) {
                    // A lock wait longer than the bound fails the enqueue: counted below.
                    s.execute("SET LOCAL lock_timeout = '" + BOUND.toMillis() + "ms'");
                  }
                  queue.enqueueRaw(
                      c,
                      TYPE,
                      BODY,
                      EnqueueOptions.defaults().withIdempotencyKeyFor(key, Duration.ofHours(1)));
                  c.commit();
                } catch (Exception e) {
                  if (isLockTimeout(e)) {
                    lockTimeouts.incrementAndGet();
                  } else {
                    otherErrors.incrementAndGet();
                  }
                }
                long took = System.nanoTime() - began;
                if (during) {
                  maxDuring.accumulateAndGet(took, Math::max);
                  enqueuesDuring.incrementAndGet();
                  if (front) {
                    atTheFront.incrementAndGet();
                  }
                } else {
                  maxBefore.accumulateAndGet(took, Math::max);
                }
              }
            },
            "enqueuer");
    enqueuer.start();
    Thread.sleep(5_000); // the enqueue's own longest time, without the purge
    purging.set(true);
    long began = System.nanoTime();
    CommandRetention.Purged p = CommandRetention.builder(queue.operations()).build().purge();
    Duration purge = Duration.ofNanos(System.nanoTime() - began);
    stop.set(true);
    enqueuer.join();

    String figures =
        String.format(
            java.util.Locale.ROOT,
            "purged %d expired keys in %.1f s (batches of %d, %d ms apart) while enqueueing %d"
                + " commands (%d of them with the oldest key still to purge): %d lock waits over"
                + " %d ms; longest enqueue %.1f ms during the purge, %.1f ms in the 5 s before it;"
                + " %d other errors",
            p.keys(),
            purge.toMillis() / 1000.0,
            CommandRetention.DEFAULT_BATCH_SIZE,
            CommandRetention.DEFAULT_BATCH_PAUSE.toMillis(),
            enqueuesDuring.get(),
            atTheFront.get(),
            lockTimeouts.get(),
            BOUND.toMillis(),
            maxDuring.get() / 1e6,
            maxBefore.get() / 1e6,
            otherErrors.get());
    System.out.println(figures);
    assertThat(lockTimeouts).as(figures).hasValue(0);
    assertThat(otherErrors).as(figures).hasValue(0);
    // Every expired key is gone; the few the enqueuer took over first are running keys now.
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM retention_stall.idempotency_keys"
                    + " WHERE expires_at <= clock_timestamp()")) {
      rs.next();
      assertThat(rs.getLong(1)).isZero();
    }
    assertThat(p.keys()).isGreaterThan(KEYS * 9L / 10);
  }

  /** The key the purge deletes next (read without a lock), or null when none is left. */
  private static String oldestExpiredKey(DataSource ds) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT idempotency_key FROM retention_stall.idempotency_keys"
                    + " WHERE expires_at IS NOT NULL AND expires_at <= statement_timestamp()"
                    + " ORDER BY expires_at LIMIT 1")) {
      return rs.next() ? rs.getString(1) : null;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** True when {@code e} or a cause is PostgreSQL's lock_not_available (55P03). */
  private static boolean isLockTimeout(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.sql.SQLException sql && "55P03".equals(sql.getSQLState())) {
        return true;
      }
    }
    return false;
  }
}
