package org.messagepump.core.engine;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executors;
import javax.sql.DataSource;
import org.messagepump.core.DatabaseException;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.Limits;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Transactions;

/**
 * Runs a driver through the pump's real poll path — acquire, handle in lazy savepoints, record
 * Busy/Failed/parking, the driver's {@code completed}, commit, and the pump's rules for failed
 * commits — synchronously on the calling thread, and says what became of each delivery. For tests
 * of drivers and handlers: no threads, no timing, the same code the {@link MessagePump}'s workers
 * run.
 *
 * <pre>{@code
 * PumpTester tester = PumpTester.builder(dataSource, queue.driver(handlers)).maxFailures(3).build();
 * List<PumpTester.Result> r = tester.runOnce();        // one poll: one transaction
 * assertThat(r).extracting(PumpTester.Result::kind).containsExactly(PumpTester.Kind.HANDLED);
 * tester.drainUntilIdle();                               // poll until nothing is due
 * }</pre>
 *
 * <p>Postponed deliveries are due again only after their backoff by the database clock; set a small
 * {@code backoff} to see them again in the same test.
 */
public final class PumpTester {

  /** What became of one delivery. */
  public enum Kind {
    /** Handled: its bookkeeping committed with the handler's writes. */
    HANDLED,
    /** Busy: postponed by the backoff base, no failure counted. */
    BUSY,
    /** Failed: failure counted, postponed with backoff. */
    FAILED,
    /**
     * Parked: failed for the last time its {@link RetryPolicy} allows, or with a failure it does
     * not retry.
     */
    PARKED,
    /** Its transaction was rolled back (lost connection, failed commit); it comes back. */
    ABANDONED
  }

  /**
   * One delivery's fate.
   *
   * @param delivery the delivery as acquired
   * @param kind what became of it
   * @param cause the failure, for FAILED, PARKED and (when known) ABANDONED; else null
   */
  public record Result(Delivery delivery, Kind kind, Throwable cause) {

    /** The delivery's message id. */
    public String messageId() {
      return delivery.messageId();
    }
  }

  private final DataSource dataSource;
  private final Poller poller;

  private PumpTester(Builder b) {
    PumpMetrics metrics = new PumpMetrics(null, "tester", b.driver.name());
    PumpOptions options = b.options;
    HandlerTimeouts timeouts = options.timeouts("tester", Executors.defaultThreadFactory());
    DeliveryRunner runner =
        new DeliveryRunner(
            "tester",
            b.dataSource,
            b.driver,
            options.policies(),
            metrics,
            timeouts,
            b.interceptors);
    this.dataSource = b.dataSource;
    LeaseRunner leases =
        b.driver
            .lease()
            .map(
                lease ->
                    new LeaseRunner(
                        "tester",
                        b.dataSource,
                        b.driver,
                        runner,
                        metrics,
                        timeouts,
                        new LeaseKeeper(
                            "tester",
                            b.dataSource,
                            b.driver,
                            lease,
                            Executors.defaultThreadFactory(),
                            metrics)))
            .orElse(null);
    this.poller = new Poller(b.driver, runner, options.batchSize(), metrics, leases);
  }

  /** A builder for a tester of {@code driver} on {@code dataSource}. */
  public static Builder builder(DataSource dataSource, Driver driver) {
    return new Builder(
        Objects.requireNonNull(dataSource, "dataSource"), Objects.requireNonNull(driver, "driver"));
  }

  /**
   * One poll in one transaction: the deliveries acquired and what became of each, in order; empty
   * when nothing was due. A database error while acquiring is thrown as a {@link
   * DatabaseException}.
   */
  public List<Result> runOnce() {
    List<DeliveryRunner.Recorded> seen = new ArrayList<>();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        poller.poll(c, seen);
      } catch (SQLException | RuntimeException e) {
        Transactions.rollbackQuietly(c);
        throw e;
      }
    } catch (SQLException e) {
      throw new DatabaseException("polling", e);
    }
    List<Result> out = new ArrayList<>(seen.size());
    for (DeliveryRunner.Recorded r : seen) {
      out.add(new Result(r.delivery(), Kind.valueOf(r.result().name()), r.cause()));
    }
    return Collections.unmodifiableList(out);
  }

  /**
   * Polls until a poll finds nothing due (at most {@code 10,000} polls) and returns every result in
   * order.
   */
  public List<Result> drainUntilIdle() {
    List<Result> all = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      List<Result> r = runOnce();
      if (r.isEmpty()) {
        return all;
      }
      all.addAll(r);
    }
    throw new IllegalStateException("still not idle after 10,000 polls: a delivery loops");
  }

  /**
   * Builds a {@link PumpTester}; options as on {@link MessagePump.Builder}, held as the same {@link
   * PumpOptions} and checked by it. Of those, the tester uses the batch size, the retry policies
   * and the handler timeouts; it has no threads to size, no idle wait, no shutdown and no LISTEN.
   */
  public static final class Builder {
    private final DataSource dataSource;
    private final Driver driver;
    private PumpOptions options = PumpOptions.defaults();
    private final List<HandlerInterceptor> interceptors = new ArrayList<>();

    private Builder(DataSource dataSource, Driver driver) {
      this.dataSource = dataSource;
      this.driver = driver;
    }

    /**
     * All options at once, replacing those set before, as {@link
     * MessagePump.Builder#options(PumpOptions)}; not null.
     */
    public Builder options(PumpOptions options) {
      if (options == null) {
        throw new IllegalArgumentException("options must not be null");
      }
      this.options = options;
      return this;
    }

    /**
     * Adds an interceptor around every delivery's handling, as {@link
     * MessagePump.Builder#interceptor(HandlerInterceptor)}; not null.
     */
    public Builder interceptor(HandlerInterceptor interceptor) {
      if (interceptor == null) {
        throw new IllegalArgumentException("interceptor must not be null");
      }
      interceptors.add(interceptor);
      return this;
    }

    /** Deliveries per poll, 1 to {@value Limits#MAX_BATCH_SIZE}. */
    public Builder batchSize(int batchSize) {
      options = options.withBatchSize(batchSize);
      return this;
    }

    /**
     * Failures after which a delivery is parked; at least 1, as {@link
     * MessagePump.Builder#maxFailures(int)} (default {@value RetryPolicy#DEFAULT_MAX_ATTEMPTS}).
     */
    public Builder maxFailures(int maxFailures) {
      options = options.withMaxFailures(maxFailures);
      return this;
    }

    /** Backoff base and cap (the Busy delay and the bounds of the Failed delay). */
    public Builder backoff(Duration base, Duration cap) {
      options = options.withBackoff(base, cap);
      return this;
    }

    /** The retry policy of every message type, as {@link MessagePump.Builder#retryPolicy}. */
    public Builder retryPolicy(RetryPolicy policy) {
      options = options.withRetryPolicy(policy);
      return this;
    }

    /**
     * The retry policy of one message type, as {@link MessagePump.Builder#retryPolicy(String,
     * RetryPolicy)}.
     */
    public Builder retryPolicy(String messageType, RetryPolicy policy) {
      options = options.withRetryPolicy(messageType, policy);
      return this;
    }

    /**
     * The handler timeout, as {@link MessagePump.Builder#handlerTimeout(Duration)}: the handler
     * runs on the thread that calls {@link #runOnce()}, which the timeout interrupts, and its
     * statement is cancelled. The delivery's result is then {@link Kind#FAILED} (or {@link
     * Kind#PARKED} at {@code maxFailures}) with a {@link HandlerTimeoutException} as its cause.
     */
    public Builder handlerTimeout(Duration timeout) {
      options = options.withHandlerTimeout(timeout);
      return this;
    }

    /** The handler timeout of one message type, overriding {@link #handlerTimeout(Duration)}. */
    public Builder handlerTimeout(String messageType, Duration timeout) {
      options = options.withHandlerTimeout(messageType, timeout);
      return this;
    }

    /** The tester. */
    public PumpTester build() {
      return new PumpTester(this);
    }
  }
}
