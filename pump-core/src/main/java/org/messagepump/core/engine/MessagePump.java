package org.messagepump.core.engine;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.messagepump.core.Backoff;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.Limits;
import org.messagepump.core.RetryPolicy;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Meters;
import org.messagepump.core.spi.MicrometerMeters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker pool that acquires deliveries through a {@link Driver}, one transaction at a time per
 * worker, runs the handler in that transaction, maps Busy/Failed to postponement or parking as the
 * delivery's {@link RetryPolicy} says, and commits.
 *
 * <pre>{@code
 * try (MessagePump pump = MessagePump.builder(dataSource)
 *         .name("billing")
 *         .driver(driver)
 *         .workers(8)
 *         .build()) {
 *   pump.start();
 *   ...
 * } // close() drains within the grace period
 * }</pre>
 */
public final class MessagePump implements AutoCloseable {

  /** Default pump name. */
  public static final String DEFAULT_NAME = "pump";

  /**
   * {@code maxFailures} meaning "never park": retry forever ({@link RetryPolicy#retryForever()}).
   */
  public static final int UNLIMITED_FAILURES = RetryPolicy.UNLIMITED_ATTEMPTS;

  private static final Logger log = LoggerFactory.getLogger(MessagePump.class);
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  private final String name;
  private final Duration shutdownGrace;
  private final ThreadFactory threadFactory;
  private final int workerCount;
  private final Dispatcher dispatcher;
  private final DeliveryRunner runner;
  private final HandlerTimeouts timeouts;
  private final LeaseKeeper leaseKeeper; // null unless the driver is in lease mode
  private final WakeListener listener;
  private Thread listenerThread;
  private final ExecutorService workers;
  private final Object lifecycle = new Object();
  private Thread dispatcherThread;
  private boolean started;
  private boolean closed;

  private MessagePump(Builder b, PumpOptions options) {
    this.name = b.name;
    this.shutdownGrace = options.shutdownGrace();
    this.threadFactory = b.threadFactory;
    this.workerCount = options.workers();
    PumpMetrics metrics = new PumpMetrics(b.meters, b.name, b.driver.name());
    RetryPolicies policies = options.policies();
    // The pump's own policy also paces its retries after failed polls and abandoned batches.
    Backoff backoff = policies.perPump().backoff();
    AtomicInteger workerIds = new AtomicInteger();
    this.workers =
        Executors.newFixedThreadPool(
            workerCount, r -> named(r, "pump-" + name + "-worker-" + workerIds.incrementAndGet()));
    this.timeouts = options.timeouts(name, b.threadFactory);
    this.runner =
        new DeliveryRunner(
            name, b.dataSource, b.driver, policies, metrics, timeouts, b.interceptors);
    this.leaseKeeper =
        b.driver
            .lease()
            .map(
                lease ->
                    new LeaseKeeper(name, b.dataSource, b.driver, lease, b.threadFactory, metrics))
            .orElse(null);
    LeaseRunner leases =
        leaseKeeper == null
            ? null
            : new LeaseRunner(name, b.dataSource, b.driver, runner, metrics, timeouts, leaseKeeper);
    this.dispatcher =
        new Dispatcher(
            name,
            b.dataSource,
            new Poller(b.driver, runner, options.batchSize(), metrics, leases),
            workerCount,
            options.pollInterval(),
            backoff,
            metrics,
            workers);
    this.listener =
        options.notifications()
            ? b.driver
                .wakeChannel()
                .map(
                    ch ->
                        new WakeListener(
                            name,
                            b.notificationsDataSource != null
                                ? b.notificationsDataSource
                                : b.dataSource,
                            ch,
                            dispatcher,
                            backoff))
                .orElse(null)
            : null;
  }

  /**
   * A builder for a pump reading from {@code dataSource} (a pool such as HikariCP).
   *
   * @throws IllegalArgumentException if {@code dataSource} is null
   */
  public static Builder builder(DataSource dataSource) {
    return new Builder(notNull("dataSource", dataSource));
  }

  /** The pump's name (in thread names, log lines and metric tags). */
  public String name() {
    return name;
  }

  /** Starts the dispatcher and the workers. A pump starts once. */
  public void start() {
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException(name + ": pump is closed");
      }
      if (started) {
        throw new IllegalStateException(name + ": pump is already started");
      }
      started = true;
      dispatcherThread = named(dispatcher, "pump-" + name + "-dispatcher");
      dispatcherThread.start();
      if (listener != null) {
        listenerThread = named(listener, "pump-" + name + "-listener");
        listenerThread.setDaemon(true);
        listenerThread.start();
      }
      log.info("{}: started with {} workers", name, workerCount);
    }
  }

  /** True between {@link #start()} and {@link #close()}. */
  public boolean isRunning() {
    synchronized (lifecycle) {
      return started && !closed;
    }
  }

  /**
   * The pump's acquisition health now: {@code STOPPED} before {@link #start()} and after {@link
   * #close()}; {@code DEGRADED} while its polls fail (with since when and the last error); {@code
   * RUNNING} otherwise. Reads memory only: cheap enough for every health check.
   */
  public PumpHealth health() {
    return isRunning() ? dispatcher.health() : PumpHealth.stopped();
  }

  /**
   * Stops acquiring in this process until {@link #resume()}: batches already running finish and
   * commit; no new transaction is opened (a poll waiting for a pool connection gives it back
   * unused; one whose acquisition statement is already under way finishes like a running batch).
   * Works before {@link #start()} too (the pump then starts paused). To stop every process
   * acquiring a command type, use the cluster-wide pause of the driver ({@code
   * CommandOperations.pauseType}).
   */
  public void pause() {
    dispatcher.pause();
    log.info("{}: paused", name);
  }

  /** Acquires again after {@link #pause()}, at once. */
  public void resume() {
    dispatcher.resume();
    log.info("{}: resumed", name);
  }

  /** True between {@link #pause()} and {@link #resume()}. */
  public boolean isPaused() {
    return dispatcher.isPaused();
  }

  /** Ends the current idle wait at once (there may be new work). */
  public void wake() {
    dispatcher.wake();
  }

  /**
   * Stops acquiring, lets in-flight handlers finish within the shutdown grace period, then
   * interrupts them and rolls their transactions back (their deliveries come back later). Returns
   * within about the grace period.
   */
  @Override
  public void close() {
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      closed = true;
    }
    long deadline = System.nanoTime() + shutdownGrace.toNanos();
    // Keep a slice of the grace period for interrupting and aborting what is still running.
    long reserve = Math.min(shutdownGrace.toNanos() / 5, TimeUnit.SECONDS.toNanos(1));
    runner.stopping();
    dispatcher.stop();
    if (listener != null) {
      listener.stop();
    }
    if (dispatcherThread != null) {
      join(dispatcherThread, deadline - reserve);
    }
    if (listenerThread != null) {
      join(
          listenerThread,
          Math.min(deadline - reserve, System.nanoTime() + TimeUnit.SECONDS.toNanos(1)));
    }
    workers.shutdown();
    boolean drained = await(deadline - reserve);
    if (!drained) {
      workers.shutdownNow();
      int aborted = dispatcher.abortInFlight();
      drained = await(deadline);
      log.warn(
          "{}: grace period of {} over; interrupted the workers and rolled back {} transactions",
          name,
          shutdownGrace,
          aborted);
    }
    if (dispatcherThread != null && dispatcherThread.isAlive()) {
      dispatcherThread.interrupt();
    }
    timeouts.shutdown();
    if (leaseKeeper != null) {
      leaseKeeper.shutdown(); // a handler still running past the grace loses its lease in time
    }
    log.info("{}: closed{}", name, drained ? "" : " (some workers were still stopping)");
  }

  private boolean await(long deadlineNanos) {
    try {
      return workers.awaitTermination(
          Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static void join(Thread t, long deadlineNanos) {
    try {
      TimeUnit.NANOSECONDS.timedJoin(t, Math.max(1, deadlineNanos - System.nanoTime()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private Thread named(Runnable r, String threadName) {
    Thread t = threadFactory.newThread(r);
    t.setName(threadName);
    return t;
  }

  /**
   * Builds a {@link MessagePump}: what it is wired to (DataSource, driver, name, thread factory,
   * meter registry, interceptors) and its {@link PumpOptions}, set one by one here or all at once
   * with {@link #options(PumpOptions)}. Setters reject bad values, null included, with an {@link
   * IllegalArgumentException} naming the option; {@link #build()} rejects a missing driver with an
   * {@link IllegalStateException}.
   */
  public static final class Builder {
    private final DataSource dataSource;
    private String name = DEFAULT_NAME;
    private Driver driver;
    private PumpOptions options = PumpOptions.defaults();
    // backoffBase and backoffCap may be set one at a time: their order is checked at build, when
    // they change the pump's retry policy. Null when not set since the policy was last replaced.
    private Duration backoffBase;
    private Duration backoffCap;
    private ThreadFactory threadFactory = Executors.defaultThreadFactory();
    private Meters meters;
    private DataSource notificationsDataSource;
    private final List<HandlerInterceptor> interceptors = new ArrayList<>();

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** The pump's name: 1–64 letters, digits, {@code _ . -}. Default {@value #DEFAULT_NAME}. */
    public Builder name(String name) {
      if (name == null || !NAME.matcher(name).matches()) {
        throw new IllegalArgumentException(
            "name must be 1-64 letters, digits, '_', '.' or '-': " + name);
      }
      this.name = name;
      return this;
    }

    /** The driver to pump (required; not null). */
    public Builder driver(Driver driver) {
      this.driver = notNull("driver", driver);
      return this;
    }

    /**
     * All of the pump's options at once, replacing every option set before (those set after it
     * change it); not null. Default {@link PumpOptions#defaults()}.
     */
    public Builder options(PumpOptions options) {
      this.options = notNull("options", options);
      this.backoffBase = null;
      this.backoffCap = null;
      return this;
    }

    /**
     * Adds an interceptor around the handling of every delivery; not null. Interceptors run in the
     * order they are added, the first outermost. None by default (then the pump calls the driver
     * directly).
     */
    public Builder interceptor(HandlerInterceptor interceptor) {
      interceptors.add(notNull("interceptor", interceptor));
      return this;
    }

    /** Worker threads, at least 1. Default 4. */
    public Builder workers(int workers) {
      options = options.withWorkers(workers);
      return this;
    }

    /** Deliveries per transaction, 1 to {@value Limits#MAX_BATCH_SIZE}. Default 1. */
    public Builder batchSize(int batchSize) {
      options = options.withBatchSize(batchSize);
      return this;
    }

    /** Wait after a poll that found nothing; positive. Default 1 s. */
    public Builder pollInterval(Duration pollInterval) {
      options = options.withPollInterval(pollInterval);
      return this;
    }

    /**
     * Backoff base (the Busy delay) of the pump's retry policy; positive. Default 250 ms. Shorthand
     * for the policy's {@link RetryPolicy#withExponentialBackoff(Duration, Duration)}.
     */
    public Builder backoffBase(Duration backoffBase) {
      this.backoffBase = PumpOptions.positive("backoffBase", backoffBase);
      return this;
    }

    /**
     * Backoff cap of the pump's retry policy; positive and at least the base (checked at build).
     * Default 5 min.
     */
    public Builder backoffCap(Duration backoffCap) {
      this.backoffCap = PumpOptions.positive("backoffCap", backoffCap);
      return this;
    }

    /**
     * Sets the backoff base and cap of the pump's retry policy together; the cap must be at least
     * the base. Shorthand for {@link RetryPolicy#withExponentialBackoff(Duration, Duration)}.
     */
    public Builder backoff(Duration base, Duration cap) {
      options = options.withBackoff(base, cap);
      this.backoffBase = null;
      this.backoffCap = null;
      return this;
    }

    /**
     * Failures after which a delivery is parked (the driver's dead letter): with 5, the fifth
     * failed attempt parks it. At least 1; {@link #UNLIMITED_FAILURES} never parks. Default {@value
     * RetryPolicy#DEFAULT_MAX_ATTEMPTS}. Shorthand for the pump's {@link
     * RetryPolicy#withMaxAttempts(int)}.
     */
    public Builder maxFailures(int maxFailures) {
      options = options.withMaxFailures(maxFailures);
      return this;
    }

    /**
     * The pump's retry policy, for every message type without one of its own; not null. Default
     * {@link RetryPolicy#defaults()}: {@value RetryPolicy#DEFAULT_MAX_ATTEMPTS} attempts with
     * backoff from 250 ms to 5 min. Replaces what {@link #backoff}, {@link #backoffBase}, {@link
     * #backoffCap} and {@link #maxFailures} set before; those set after it change this policy. Its
     * backoff also paces the pump's own retries after failed polls.
     */
    public Builder retryPolicy(RetryPolicy policy) {
      options = options.withRetryPolicy(policy);
      this.backoffBase = null;
      this.backoffCap = null;
      return this;
    }

    /**
     * The retry policy of one message type (command type, event type or balancer group's messages
     * as the driver names them), overriding {@link #retryPolicy(RetryPolicy)} as a whole.
     */
    public Builder retryPolicy(String messageType, RetryPolicy policy) {
      options = options.withRetryPolicy(messageType, policy);
      return this;
    }

    /**
     * The options as set: those of {@link #options(PumpOptions)} and the single setters, with a
     * backoff base or cap set alone applied to the pump's retry policy.
     *
     * @throws IllegalArgumentException when the backoff cap is below its base
     */
    PumpOptions resolvedOptions() {
      if (backoffBase == null && backoffCap == null) {
        return options;
      }
      RetryPolicy p = options.retryPolicy();
      return options.withBackoff(
          backoffBase != null ? backoffBase : p.backoffBase(),
          backoffCap != null ? backoffCap : p.backoffCap());
    }

    /** The pump's retry policies as set: its own, and those of single types. */
    RetryPolicies policies() {
      return resolvedOptions().policies();
    }

    /**
     * How long {@link MessagePump#close()} waits for in-flight handlers; not null, ≥ 0. Default 10
     * s.
     */
    public Builder shutdownGrace(Duration shutdownGrace) {
      options = options.withShutdownGrace(shutdownGrace);
      return this;
    }

    /** Creates the dispatcher and worker threads (the pump names them); not null. */
    public Builder threadFactory(ThreadFactory threadFactory) {
      this.threadFactory = notNull("threadFactory", threadFactory);
      return this;
    }

    /** Where to register the {@code messagepump.*} meters; not null. None by default. */
    public Builder meterRegistry(MeterRegistry meterRegistry) {
      this.meters = MicrometerMeters.of(notNull("meterRegistry", meterRegistry));
      return this;
    }

    /**
     * Whether to LISTEN on the driver's wake channel (one pooled connection held while running) so
     * that new work wakes an idle pump at once. Default true; without it, or when the driver has no
     * channel, the pump polls.
     */
    public Builder notifications(boolean notifications) {
      options = options.withNotifications(notifications);
      return this;
    }

    /**
     * The longest a handler may run (none by default). At expiry the pump interrupts the handler,
     * cancels the statement it runs on the pump's connection and refuses it that connection from
     * then on. When the handler returns, the pump rolls back to the delivery's savepoint (nothing
     * the handler wrote commits) and records a failure with {@link HandlerTimeoutException}
     * (postponed with backoff, parked as its retry policy says) in the delivery's own transaction,
     * whatever the handler returned: the delivery stays locked, due nowhere, until its failure is
     * committed. A handler that ignores the interrupt keeps its worker until it returns. Other
     * deliveries of the same batch are not affected. Positive, at most {@link Limits#MAX_DELAY}.
     */
    public Builder handlerTimeout(Duration timeout) {
      options = options.withHandlerTimeout(timeout);
      return this;
    }

    /**
     * The handler timeout of one message type (command type, event type or balancer group's
     * messages as the driver names them), overriding {@link #handlerTimeout(Duration)}.
     */
    public Builder handlerTimeout(String messageType, Duration timeout) {
      options = options.withHandlerTimeout(messageType, timeout);
      return this;
    }

    /**
     * Where the LISTEN connection comes from, when it must not come from the pump's pool: behind
     * PgBouncer in transaction pooling mode a LISTEN outlives the transaction that ran it only on a
     * direct connection, so give a DataSource that reaches PostgreSQL itself (one connection, held
     * while the pump runs). Default: the pump's own DataSource. When this source fails the pump
     * polls, as it does without notifications, and tries to listen again with backoff. See
     * docs/deployment.md.
     */
    public Builder notificationsDataSource(DataSource notificationsDataSource) {
      this.notificationsDataSource = notNull("notificationsDataSource", notificationsDataSource);
      return this;
    }

    /** The pump, not yet started. */
    public MessagePump build() {
      if (driver == null) {
        throw new IllegalStateException("driver is required");
      }
      // Checks the backoff's order before anything is created.
      return new MessagePump(this, resolvedOptions());
    }
  }

  private static <T> T notNull(String option, T value) {
    if (value == null) {
      throw new IllegalArgumentException(option + " must not be null");
    }
    return value;
  }
}
