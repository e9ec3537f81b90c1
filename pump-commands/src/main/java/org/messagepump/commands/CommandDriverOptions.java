package org.messagepump.commands;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How a command driver runs, given to {@link CommandQueue#driver(CommandHandlers,
 * CommandDriverOptions)}: immutable, {@link #defaults()} then {@code withX} methods that check
 * their value at once, with an {@link IllegalArgumentException} naming the option.
 *
 * <p>By default the driver runs in transactional mode: each command is claimed, handled and deleted
 * in one transaction. {@link #withLease(Duration)} switches to lease mode (docs/leases.md): each
 * command is claimed with a lease in a short transaction, its handler runs with no transaction open
 * while the pump extends the lease, and its completion is fenced. Lease mode suits handlers that
 * run for long (seconds to minutes): at-least-once for the handler's effects, exactly once for the
 * queue's bookkeeping.
 *
 * <pre>{@code
 * CommandDriver driver =
 *     queue.driver(handlers, CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30)));
 * }</pre>
 */
public final class CommandDriverOptions {

  /** The shortest lease: the pump beats every third of it. */
  public static final Duration MIN_LEASE = Duration.ofSeconds(1);

  /**
   * The longest lease. A lease is extended while its handler runs, so its length bounds only how
   * late a delivery whose process died comes back, not how long a handler may run.
   */
  public static final Duration MAX_LEASE = Duration.ofHours(1);

  private static final CommandDriverOptions DEFAULTS = new CommandDriverOptions(null);

  private final Duration lease; // null: transactional mode

  private CommandDriverOptions(Duration lease) {
    this.lease = lease;
  }

  /** Transactional mode: no lease. */
  public static CommandDriverOptions defaults() {
    return DEFAULTS;
  }

  /**
   * Lease mode with leases of {@code lease}, between {@link #MIN_LEASE} and {@link #MAX_LEASE};
   * else (or null) {@link IllegalArgumentException}.
   */
  public CommandDriverOptions withLease(Duration lease) {
    if (lease == null) {
      throw new IllegalArgumentException("lease must not be null");
    }
    if (lease.compareTo(MIN_LEASE) < 0 || lease.compareTo(MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "lease must be at least " + MIN_LEASE + " and at most " + MAX_LEASE + ": " + lease);
    }
    return new CommandDriverOptions(lease);
  }

  /** Transactional mode: these options without a lease. */
  public CommandDriverOptions withoutLease() {
    return DEFAULTS;
  }

  /** The lease of lease mode; empty in transactional mode. */
  public Optional<Duration> lease() {
    return Optional.ofNullable(lease);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CommandDriverOptions other && Objects.equals(lease, other.lease);
  }

  @Override
  public int hashCode() {
    return Objects.hashCode(lease);
  }

  @Override
  public String toString() {
    return "CommandDriverOptions[lease=" + (lease == null ? "none" : lease) + "]";
  }
}
