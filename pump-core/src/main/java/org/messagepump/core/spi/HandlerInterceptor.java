package org.messagepump.core.spi;

import org.messagepump.core.Tx;

/**
 * Runs around the handling of each delivery: code before and after the handler, context that is
 * current while it runs (a tracing span's scope, a framework's transaction binding), and the
 * outcome as the pump decided it. Registered on {@code MessagePump.Builder.interceptor(...)} (and
 * {@code PumpTester.Builder.interceptor(...)}); several run in the order they were added, the first
 * outermost.
 *
 * <pre>{@code
 * HandlerInterceptor timing = handling -> {
 *   long start = System.nanoTime();
 *   Outcome outcome = handling.proceed();   // the next interceptor, then the handler
 *   log.info("{} took {} µs: {}", handling.delivery().messageType(),
 *       (System.nanoTime() - start) / 1_000, outcome);
 *   return outcome;
 * };
 * MessagePump.builder(dataSource).driver(driver).interceptor(timing).build();
 * }</pre>
 *
 * <p>The rules:
 *
 * <ul>
 *   <li>An interceptor calls {@link Handling#proceed()} exactly once and returns an outcome. One
 *       that returns without proceeding fails the delivery with an {@link IllegalStateException}; a
 *       second call to {@code proceed()} throws one.
 *   <li>{@code proceed()} never throws: what the handler or an inner interceptor threw is already
 *       classified as the pump records it ({@link Outcome.Busy} for {@code BusyException} and
 *       transient database errors, {@link Outcome.Failed} with the cause otherwise). A handler that
 *       ran past its handler timeout gives {@link Outcome.Failed} whose cause is a {@link
 *       org.messagepump.core.HandlerTimeoutException}, whatever it returned; so does a handler that
 *       returned normally while its transaction is aborted by an error it caught (with an {@link
 *       IllegalStateException}).
 *   <li>The outcome an interceptor returns is recorded. It may turn a {@link Outcome.Handled} into
 *       a failure (return {@link Outcome#failed(Throwable)}, or throw: the exception is classified
 *       as a handler's), not the reverse: a delivery that {@code proceed()} reported busy or failed
 *       stays so whatever is returned. When the pump's connection was lost, or the pump stopped,
 *       while the handler ran, {@code proceed()} reports the failure that caused it and the
 *       delivery comes back uncounted.
 *   <li>Everything runs on the worker's thread, inside the delivery's savepoint window and under
 *       its handler timeout: what an interceptor writes through {@link Handling#tx()} after {@code
 *       proceed()} belongs to the delivery (rolled back with it when it fails). A timeout that
 *       expires while an interceptor's own code runs after {@code proceed()} still fails the
 *       delivery; the interceptors outside it see that in the outcome their {@code proceed()}
 *       returns.
 *   <li>After the interceptors, the pump may still fail a handled delivery whose deferred
 *       constraints are violated (checked at the delivery's end only once a commit of the pump has
 *       failed).
 * </ul>
 *
 * <p>With no interceptor registered the pump calls the driver directly: no interceptor machinery
 * runs and nothing is allocated for it. With some, one small object per delivery.
 *
 * <p>Part of the SPI, beside {@link Driver}: it is implemented by integrations (tracing, framework
 * binding) and sees the SPI's types ({@link Delivery}, {@link Outcome}, the delivery's {@link Tx}).
 * Wrapping a driver ({@link ForwardingDriver}) remains the way to change acquisition (as an {@link
 * AcquisitionGate} does); an interceptor sees only the handling of deliveries already acquired.
 */
@FunctionalInterface
public interface HandlerInterceptor {

  /**
   * Handles one delivery: calls {@link Handling#proceed()} once and returns the outcome to record,
   * normally the one {@code proceed()} returned.
   *
   * @throws Exception counted as the handler's own exception would be (see the rules above)
   */
  Outcome intercept(Handling handling) throws Exception;

  /**
   * One delivery's handling as an interceptor sees it. Valid only during {@link #intercept}, on the
   * thread that called it.
   */
  interface Handling {

    /** The delivery: its envelope (id, type, headers), attempt, stream position. */
    Delivery delivery();

    /**
     * The delivery's transaction as the handler gets it (the pump's connection, which sets the
     * delivery's savepoint at its first statement and refuses commit, rollback and close); null in
     * lease mode ({@link Driver#lease()}), where the handler runs with no transaction.
     */
    Tx tx();

    /** The name of the pump (or {@code tester} in a {@code PumpTester}). */
    String pumpName();

    /** The driver's {@link Driver#name()}. */
    String driverName();

    /**
     * Runs the next interceptor, or the handler after the last one, and returns the outcome as the
     * pump decided it. Never throws but for a second call.
     *
     * @throws IllegalStateException when called a second time
     */
    Outcome proceed();
  }
}
