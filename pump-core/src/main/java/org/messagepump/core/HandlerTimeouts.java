package org.messagepump.core;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pump's handler timeouts: a watch per delivery that, at expiry, interrupts the worker and
 * aborts the delivery's connection. Aborting is what makes the timeout safe with the pump's
 * transaction: a handler stuck in a JDBC call ignores interrupts, and one that catches the
 * interrupt could go on writing; with the connection gone, the server rolls the transaction back
 * and nothing the handler wrote can commit. The pool discards the aborted connection when it is
 * returned. The delivery's failure is then counted in a fresh transaction ({@link DeliveryRunner}).
 *
 * <p>One timer thread per pump that has a timeout, started lazily; none otherwise.
 */
final class HandlerTimeouts {

  private static final Logger log = LoggerFactory.getLogger(MessagePump.class);

  static final HandlerTimeouts NONE = new HandlerTimeouts("", null, null, Map.of(), null);

  /** How long a worker waits for a timed-out handler's server session to end. */
  private static final long TERMINATION_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

  private static final int RUNNING = 0;
  private static final int DONE = 1;
  private static final int TIMED_OUT = 2;

  private final String pumpName;
  private final DataSource dataSource;
  private final Duration perPump;
  private final Map<String, Duration> perType;
  private final ThreadFactory threadFactory;
  private ScheduledThreadPoolExecutor timer;

  HandlerTimeouts(
      String pumpName,
      DataSource dataSource,
      Duration perPump,
      Map<String, Duration> perType,
      ThreadFactory factory) {
    this.pumpName = pumpName;
    this.dataSource = dataSource;
    this.perPump = perPump;
    this.perType = Map.copyOf(perType);
    this.threadFactory = factory;
  }

  /** The timeout of a message type, or null for none. */
  Duration timeoutOf(String messageType) {
    Duration d = perType.get(messageType);
    return d != null ? d : perPump;
  }

  /** Starts watching the current thread's handling of a delivery of {@code messageType}. */
  Watch start(String messageType, Connection connection) {
    Duration timeout = timeoutOf(messageType);
    if (timeout == null) {
      return Watch.UNWATCHED;
    }
    Watch w = new Watch(this, timeout, Thread.currentThread(), connection);
    w.future = timer().schedule(w::expire, timeout.toNanos(), TimeUnit.NANOSECONDS);
    return w;
  }

  private synchronized ScheduledThreadPoolExecutor timer() {
    if (timer == null) {
      timer =
          new ScheduledThreadPoolExecutor(
              1,
              r -> {
                Thread t = threadFactory.newThread(r);
                t.setName("pump-" + pumpName + "-timeouts");
                t.setDaemon(true);
                return t;
              });
      timer.setRemoveOnCancelPolicy(true);
      // The thread ends after a minute without watches (a PumpTester has no close), and comes back
      // with the next one.
      timer.setKeepAliveTime(1, TimeUnit.MINUTES);
      timer.allowCoreThreadTimeOut(true);
    }
    return timer;
  }

  /** Stops the timer thread (at the pump's close). */
  synchronized void shutdown() {
    if (timer != null) {
      timer.shutdownNow();
    }
  }

  /**
   * Ends the server session of an aborted connection and waits (at most ten seconds) until it is
   * gone. Closing the socket alone is not enough: a backend busy in a statement ({@code pg_sleep},
   * a lock wait, a long query) notices the lost client only when the statement ends, and until then
   * it holds the delivery's row lock, so its failure could not be counted. {@code
   * pg_terminate_backend} works on a session of the same role without further privileges.
   */
  private void terminate(int pid) {
    long deadline = System.nanoTime() + TERMINATION_WAIT_NANOS;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      try (PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
        ps.setInt(1, pid);
        ps.execute();
      }
      try (PreparedStatement ps =
          c.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE pid = ?")) {
        ps.setInt(1, pid);
        while (System.nanoTime() < deadline) {
          try (ResultSet rs = ps.executeQuery()) {
            if (rs.next() && rs.getLong(1) == 0) {
              return;
            }
          }
          TimeUnit.MILLISECONDS.sleep(10);
        }
      }
      log.warn("{}: a timed-out handler's server session has not ended yet", pumpName);
    } catch (SQLException | RuntimeException e) {
      log.warn(
          "{}: could not end a timed-out handler's server session: {}",
          pumpName,
          DeliveryRunner.describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** One delivery's watch. */
  static final class Watch {
    static final Watch UNWATCHED = new Watch(NONE, null, null, null);

    private final HandlerTimeouts owner;
    private final String pumpName;
    private int backendPid;
    private final Duration timeout;
    private final Thread worker;
    private final Connection connection;
    private final AtomicInteger state = new AtomicInteger(RUNNING);
    private final CountDownLatch expired = new CountDownLatch(1);
    private ScheduledFuture<?> future;

    private Watch(HandlerTimeouts owner, Duration timeout, Thread worker, Connection connection) {
      this.owner = owner;
      this.pumpName = owner.pumpName;
      this.timeout = timeout;
      this.worker = worker;
      this.connection = connection;
    }

    private void expire() {
      if (!state.compareAndSet(RUNNING, TIMED_OUT)) {
        return;
      }
      try {
        log.warn(
            "{}: handler ran past its timeout of {}; interrupting it and aborting its connection",
            pumpName,
            timeout);
        try {
          backendPid = connection.unwrap(PGConnection.class).getBackendPID();
        } catch (Exception e) {
          backendPid = 0; // not pgjdbc underneath (a test double): no server session to end
        }
        worker.interrupt();
        try {
          connection.abort(Runnable::run);
        } catch (Exception | LinkageError e) {
          log.warn("{}: aborting a timed-out handler's connection failed: {}", pumpName, e);
        }
      } finally {
        expired.countDown();
      }
    }

    /**
     * Ends the watch on the worker thread; returns the timeout exception when it expired (after the
     * timer is done with this thread, whose interrupt is then cleared), else null.
     */
    HandlerTimeoutException finish() {
      if (timeout == null) {
        return null;
      }
      if (state.compareAndSet(RUNNING, DONE)) {
        future.cancel(false);
        return null;
      }
      while (true) {
        try {
          expired.await();
          break;
        } catch (InterruptedException e) {
          // the timer's own interrupt: wait on until it is done with this thread
        }
      }
      Thread.interrupted(); // the timeout's interrupt is spent: keep the worker usable
      if (backendPid != 0) {
        owner.terminate(backendPid);
      }
      return new HandlerTimeoutException(timeout);
    }
  }
}
