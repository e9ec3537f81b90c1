package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.CommandRetention;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.testkit.PostgresExtension;

/**
 * Purging 1,000,000 expired idempotency keys while a thread enqueues continuously: the longest
 * enqueue is recorded before and during the purge (the retention job's defaults: batches of 1,000,
 * 50 ms apart). One enqueue in ten uses a key among those being purged, so it meets the purge's
 * row locks. The figures go to docs/commands.md ("Retention"). Full chaos suite only (-Pchaos):
 * loading the keys and purging them take about a minute.
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
    CommandQueue.migrate(ds, SCHEMA);
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
    AtomicLong over10msDuring = new AtomicLong();
    Thread enqueuer =
        new Thread(
            () -> {
              long i = 0;
              while (!stop.get()) {
                i++;
                String key =
                    i % 10 == 0
                        ? "expired-" + ThreadLocalRandom.current().nextInt(1, KEYS + 1)
                        : "fresh-" + i;
                boolean during = purging.get();
                long began = System.nanoTime();
                queue.enqueueRaw(
                    TYPE, BODY, EnqueueOptions.defaults().withIdempotencyKeyFor(key, Duration.ofHours(1)));
                long took = System.nanoTime() - began;
                if (during) {
                  maxDuring.accumulateAndGet(took, Math::max);
                  enqueuesDuring.incrementAndGet();
                  if (took > 10_000_000) {
                    over10msDuring.incrementAndGet();
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
    CommandRetention.Purged p = CommandRetention.builder(queue).build().purge();
    Duration purge = Duration.ofNanos(System.nanoTime() - began);
    stop.set(true);
    enqueuer.join();

    String figures =
        String.format(
            java.util.Locale.ROOT,
            "purged %d expired keys in %.1f s (batches of %d, %d ms apart) while enqueueing %d"
                + " commands: longest enqueue %.1f ms during the purge (%d over 10 ms), %.1f ms"
                + " in the 5 s before it",
            p.keys(),
            purge.toMillis() / 1000.0,
            CommandRetention.DEFAULT_BATCH_SIZE,
            CommandRetention.DEFAULT_BATCH_PAUSE.toMillis(),
            enqueuesDuring.get(),
            maxDuring.get() / 1e6,
            over10msDuring.get(),
            maxBefore.get() / 1e6);
    System.out.println(figures);
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
    assertThat(Duration.ofNanos(maxDuring.get())).as(figures).isLessThan(BOUND);
  }
}
