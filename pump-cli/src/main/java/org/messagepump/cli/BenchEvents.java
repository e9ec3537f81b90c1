package org.messagepump.cli;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.spi.Transactions;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventStore;

/** Event stream figures: appending with several writers, catching up with one or four handlers. */
final class BenchEvents {

  /** The benchmark's event. */
  record Happened(long n) {}

  static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(
          MessageTypes.builder().register(Happened.class, "bench.Happened").build());

  private final DataSource ds;
  private final EventStore store;
  private int handlerRuns;

  BenchEvents(DataSource ds) {
    this.ds = ds;
    this.store = EventStore.create(ds, CODEC);
  }

  /** {@code writers} threads append {@code total} events in batches of {@code batch}; events/s. */
  double append(int writers, int total, int batch) throws Exception {
    AtomicLong left = new AtomicLong(total);
    List<Thread> threads = new ArrayList<>();
    List<Exception> errors = new ArrayList<>();
    long start = System.nanoTime();
    for (int w = 0; w < writers; w++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  while (left.getAndAdd(-batch) > 0) {
                    List<Happened> events = new ArrayList<>(batch);
                    for (int i = 0; i < batch; i++) {
                      events.add(new Happened(i));
                    }
                    Transactions.inNew(ds, "appending events", tx -> store.append(tx, events));
                  }
                } catch (Exception e) {
                  synchronized (errors) {
                    errors.add(e);
                  }
                }
              },
              "bench-append-" + w);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    if (!errors.isEmpty()) {
      throw errors.get(0);
    }
    return total / ((System.nanoTime() - start) / 1e9);
  }

  /**
   * Appends about {@code total} events over {@code streams} new streams (up to 500 per transaction)
   * and returns how many: {@code total} rounded down to a multiple of {@code streams}.
   */
  long fill(int total, int streams) throws Exception {
    long[] ids = new long[streams];
    for (int s = 0; s < streams; s++) {
      int i = s;
      Transactions.inNew(ds, "creating a stream", tx -> ids[i] = store.createStream(tx));
    }
    int perStream = total / streams;
    for (int s = 0; s < streams; s++) {
      long stream = ids[s];
      for (int done = 0; done < perStream; done += 500) {
        int chunk = Math.min(500, perStream - done);
        List<Happened> events = new ArrayList<>(chunk);
        for (int i = 0; i < chunk; i++) {
          events.add(new Happened(done + i));
        }
        Transactions.inNew(ds, "appending events", tx -> store.appendTo(tx, stream, events));
      }
    }
    return (long) perStream * streams;
  }

  /**
   * {@code handlers} new handlers (each its own pump with {@code workers} workers) read {@code
   * events} events from the start; returns handled events per second over all handlers.
   */
  double catchUp(int handlers, int workers, int batchSize, long events)
      throws InterruptedException {
    AtomicLong seen = new AtomicLong();
    List<MessagePump> pumps = new ArrayList<>();
    long start = System.nanoTime();
    try {
      for (int h = 0; h < handlers; h++) {
        EventDriver driver =
            store.driver(
                "bench-catchup-" + (++handlerRuns),
                EventHandlers.builder()
                    .on(Happened.class, (e, ctx) -> seen.incrementAndGet())
                    .build());
        MessagePump pump =
            MessagePump.builder(ds)
                .name("bench-catchup-" + h)
                .driver(driver)
                .workers(workers)
                .batchSize(batchSize)
                .pollInterval(Duration.ofMillis(20))
                .build();
        pumps.add(pump);
        pump.start();
      }
      long target = events * handlers;
      while (seen.get() < target) {
        Thread.sleep(5);
      }
      return target / ((System.nanoTime() - start) / 1e9);
    } finally {
      pumps.forEach(MessagePump::close);
    }
  }

  /**
   * Bulk-loads {@code streams} streams, the first {@code withEvents} of them holding one event
   * each, with plain SQL (creating 200,000 streams through {@code append} would take longer than
   * the measurement): the same rows appends write. Returns the number of events.
   */
  long fillMany(int streams, int withEvents) throws Exception {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try (var ps =
          c.prepareStatement(
              "INSERT INTO eventstream.streams (next_offset)"
                  + " SELECT CASE WHEN g <= ? THEN 1 ELSE 0 END FROM generate_series(1, ?) g")) {
        ps.setInt(1, withEvents);
        ps.setInt(2, streams);
        ps.executeUpdate();
      }
      try (var ps =
          c.prepareStatement(
              "INSERT INTO eventstream.events (message_id, stream_id, stream_offset, type, payload)"
                  + " SELECT gen_random_uuid(), id, 0, ?, convert_to('{\"n\":0}', 'UTF8')"
                  + " FROM eventstream.streams WHERE next_offset = 1")) {
        ps.setString(1, CODEC.typeOf(Happened.class));
        ps.executeUpdate();
      }
      try (var ps =
          c.prepareStatement(
              "INSERT INTO eventstream.stream_types (stream_id, type, latest_offset)"
                  + " SELECT id, ?, 0 FROM eventstream.streams WHERE next_offset = 1")) {
        ps.setString(1, CODEC.typeOf(Happened.class));
        ps.executeUpdate();
      }
      c.commit();
      try (var st = c.createStatement()) {
        c.setAutoCommit(true);
        st.execute("ANALYZE eventstream.streams");
        st.execute("ANALYZE eventstream.events");
      }
    }
    return withEvents;
  }

  /**
   * Empty polls of a handler that has caught up on every stream: each one the pump's poll (a
   * transaction, the driver's acquisition, commit). Returns the median in milliseconds.
   */
  double idlePoll(String handlerKey, int polls) throws Exception {
    EventDriver driver =
        store.driver(
            handlerKey, EventHandlers.builder().on(Happened.class, (e, ctx) -> {}).build());
    double[] ms = new double[polls];
    for (int i = 0; i < polls; i++) {
      long start = System.nanoTime();
      int got;
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        got = driver.acquire(org.messagepump.core.Tx.of(c), 1).size();
        c.commit();
      }
      ms[i] = (System.nanoTime() - start) / 1e6;
      if (got != 0) {
        throw new IllegalStateException("the handler was not caught up: " + got + " deliveries");
      }
    }
    java.util.Arrays.sort(ms);
    return ms[polls / 2];
  }

  /** The handler key of the last {@link #catchUp} (of its first handler). */
  String lastHandlerKey(int handlers) {
    return "bench-catchup-" + (handlerRuns - handlers + 1);
  }

  void clear() throws Exception {
    try (Connection c = ds.getConnection();
        var s = c.createStatement()) {
      s.execute(
          "TRUNCATE eventstream.events, eventstream.streams, eventstream.stream_types,"
              + " eventstream.handler_checkpoints, eventstream.handlers, eventstream.stream_keys");
    }
  }
}
