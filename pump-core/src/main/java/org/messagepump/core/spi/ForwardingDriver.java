package org.messagepump.core.spi;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.messagepump.core.Tx;

/**
 * A {@link Driver} that forwards every call to another: subclass it and override what you want to
 * observe or change (count acquisitions, gate what is acquired, make {@code completed} fail in a
 * test). Every method of the SPI is forwarded, including the ones with defaults, so a wrapper never
 * silently drops a driver's {@code reacquire}, {@code park} or {@code wakeChannel}. To run code
 * around each delivery's handling (context, tracing), register a {@link HandlerInterceptor} on the
 * pump instead: it also sees the outcome as the pump decided it, a handler timeout included.
 */
public class ForwardingDriver implements Driver {

  private final Driver delegate;

  /** Forwards to {@code delegate}. */
  public ForwardingDriver(Driver delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /** The driver calls are forwarded to. */
  protected Driver delegate() {
    return delegate;
  }

  @Override
  public String name() {
    return delegate.name();
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max) throws SQLException {
    return delegate.acquire(tx, max);
  }

  @Override
  public List<Delivery> acquire(Tx tx, int max, AcquisitionGate gate) throws SQLException {
    return delegate.acquire(tx, max, gate);
  }

  @Override
  public Outcome handle(Tx tx, Delivery delivery) throws Exception {
    return delegate.handle(tx, delivery);
  }

  @Override
  public void completed(Tx tx, List<Delivery> handled) throws SQLException {
    delegate.completed(tx, handled);
  }

  @Override
  public void postpone(Tx tx, Delivery delivery, int failures, Duration delay) throws SQLException {
    delegate.postpone(tx, delivery, failures, delay);
  }

  @Override
  public void park(Tx tx, Delivery delivery, int failures, String reason) throws SQLException {
    delegate.park(tx, delivery, failures, reason);
  }

  @Override
  public Optional<Delivery> reacquire(Tx tx, Delivery delivery) throws SQLException {
    return delegate.reacquire(tx, delivery);
  }

  @Override
  public Optional<Duration> lease() {
    return delegate.lease();
  }

  @Override
  public List<Delivery> extendLeases(Tx tx, List<Delivery> running) throws SQLException {
    return delegate.extendLeases(tx, running);
  }

  @Override
  public Optional<String> wakeChannel() {
    return delegate.wakeChannel();
  }
}
