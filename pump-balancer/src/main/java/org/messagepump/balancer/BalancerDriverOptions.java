package org.messagepump.balancer;

import java.time.Duration;

/**
 * How a partition group's driver takes and records messages ({@link
 * MessageBalancer#driver(BalancedHandlers, BalancerDriverOptions)}). Immutable; each {@code with…}
 * method returns a copy and rejects a bad value at once with an {@link IllegalArgumentException}
 * naming the option. Options that need each other (lease mode, more than one message per turn) are
 * checked when the driver is made.
 *
 * <pre>{@code
 * BalancerDriverOptions.defaults()
 *     .withMessagesPerTurn(8)
 *     .withLeaseDuration(Duration.ofMinutes(2));
 * }</pre>
 *
 * @param lockPartition true: at most one message per key is in flight across every process
 * @param messagesPerTurn how many consecutive messages of one key a batch takes in its turn
 * @param leaseDuration how long a hand-off blocks its key without a confirm
 * @param reapInterval how often the driver looks for expired leases
 * @param maxAttempts expired leases of one message after which its key is parked
 * @param leaseOwner the owner recorded on leases, for operators
 * @param leaseMode the lease of each claim in lease mode, or {@code null} for transactional mode
 */
public record BalancerDriverOptions(
    boolean lockPartition,
    int messagesPerTurn,
    Duration leaseDuration,
    Duration reapInterval,
    int maxAttempts,
    String leaseOwner,
    Duration leaseMode) {

  private static final BalancerDriverOptions DEFAULTS =
      new BalancerDriverOptions(
          BalancerDriver.DEFAULT_LOCK_PARTITION,
          BalancerDriver.DEFAULT_MESSAGES_PER_TURN,
          BalancerDriver.DEFAULT_LEASE_DURATION,
          BalancerDriver.DEFAULT_REAP_INTERVAL,
          BalancerDriver.DEFAULT_MAX_ATTEMPTS,
          defaultOwner(),
          null);

  /** Validates every option, as the {@code with…} methods do. */
  public BalancerDriverOptions {
    if (messagesPerTurn < 1 || messagesPerTurn > BalancerDriver.MAX_MESSAGES_PER_TURN) {
      throw new IllegalArgumentException(
          "messagesPerTurn must be between 1 and "
              + BalancerDriver.MAX_MESSAGES_PER_TURN
              + ": "
              + messagesPerTurn);
    }
    Checks.positive("leaseDuration", leaseDuration);
    Checks.positive("reapInterval", reapInterval);
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1: " + maxAttempts);
    }
    Checks.name("leaseOwner", leaseOwner);
    if (leaseMode != null
        && (leaseMode.compareTo(Duration.ofSeconds(1)) < 0
            || leaseMode.compareTo(Duration.ofHours(1)) > 0)) {
      throw new IllegalArgumentException(
          "leaseMode's lease must be between 1 second and 1 hour: " + leaseMode);
    }
  }

  /**
   * The defaults: lock partition, one message per turn, 5 minute hand-off leases, reaping every
   * second, unlimited attempts, the lease owner {@code pid@host}, transactional mode.
   */
  public static BalancerDriverOptions defaults() {
    return DEFAULTS;
  }

  /**
   * With true (the default) at most one message per key is in flight across every process; with
   * false several messages of a key may run at once (no order within the key; fairness holds; the
   * pool needs one spare connection for acquisition; {@link Result.Handoff} is refused).
   */
  public BalancerDriverOptions withLockPartition(boolean lockPartition) {
    return new BalancerDriverOptions(
        lockPartition,
        messagesPerTurn,
        leaseDuration,
        reapInterval,
        maxAttempts,
        leaseOwner,
        leaseMode);
  }

  /**
   * Up to how many consecutive messages of one key a batch takes in the key's turn (1 to {@value
   * BalancerDriver#MAX_MESSAGES_PER_TURN}; default 1, one message per key per turn as
   * balancer-core). With the pump's {@code batchSize} N above 1, a batch walks the ready keys as
   * always and takes up to this many messages of each, up to N in all: fewer keys per transaction,
   * so fewer key rows locked and looked up per message. The messages of a key are handled in order;
   * once one is not {@link Result.Ok}, the rest are written back untouched and wait for the key's
   * next turn. A key with failures counted gets one message per turn. Fairness holds per turn: a
   * key waits for at most one turn of every other ready key, and a turn is now up to this many
   * messages. Needs lock partition.
   */
  public BalancerDriverOptions withMessagesPerTurn(int messagesPerTurn) {
    return new BalancerDriverOptions(
        lockPartition,
        messagesPerTurn,
        leaseDuration,
        reapInterval,
        maxAttempts,
        leaseOwner,
        leaseMode);
  }

  /**
   * How long a hand-off blocks its key without a confirm; positive, at most {@link
   * org.messagepump.core.Limits#MAX_DELAY}. Default 5 minutes.
   */
  public BalancerDriverOptions withLeaseDuration(Duration leaseDuration) {
    return new BalancerDriverOptions(
        lockPartition,
        messagesPerTurn,
        leaseDuration,
        reapInterval,
        maxAttempts,
        leaseOwner,
        leaseMode);
  }

  /**
   * How often the driver looks for expired leases; positive, at most {@link
   * org.messagepump.core.Limits#MAX_DELAY}. Default 1 second.
   */
  public BalancerDriverOptions withReapInterval(Duration reapInterval) {
    return new BalancerDriverOptions(
        lockPartition,
        messagesPerTurn,
        leaseDuration,
        reapInterval,
        maxAttempts,
        leaseOwner,
        leaseMode);
  }

  /**
   * Expired leases of one message after which its key is parked (≥ 1). Default unlimited ({@value
   * BalancerDriver#DEFAULT_LEASE_MODE_MAX_ATTEMPTS} in lease mode).
   */
  public BalancerDriverOptions withMaxAttempts(int maxAttempts) {
    return new BalancerDriverOptions(
        lockPartition,
        messagesPerTurn,
        leaseDuration,
        reapInterval,
        maxAttempts,
        leaseOwner,
        leaseMode);
  }

  /**
   * The owner recorded on leases (for operators): not blank, no NUL, at most {@link
   * org.messagepump.core.Limits#MAX_KEY_BYTES} UTF-8 bytes. Default {@code pid@host}.
   */
  public BalancerDriverOptions withLeaseOwner(String leaseOwner) {
    return new BalancerDriverOptions(
        lockPartition,
        messagesPerTurn,
        leaseDuration,
        reapInterval,
        maxAttempts,
        leaseOwner,
        leaseMode);
  }

  /**
   * Lease mode (docs/leases.md): each message's key is claimed with a lease of {@code lease} in a
   * short transaction, the handler runs with no transaction held while the pump extends the lease,
   * and Ok, Requeue, Handoff, Busy and failures are recorded fenced by the claim's token ({@link
   * BalancedMessage#handoffToken()}). The key stays blocked while its message runs, so the order
   * per key holds. An expired lease counts an attempt ({@link BalancedMessage#attempts()}); the key
   * parks at {@link #maxAttempts}, which defaults to {@value
   * BalancerDriver#DEFAULT_LEASE_MODE_MAX_ATTEMPTS} in lease mode. Needs lock partition and one
   * message per turn; {@code lease} between 1 second and 1 hour, else {@link
   * IllegalArgumentException}.
   */
  public BalancerDriverOptions withLeaseMode(Duration lease) {
    if (lease == null) {
      throw new IllegalArgumentException("leaseMode's lease must not be null");
    }
    return new BalancerDriverOptions(
        lockPartition,
        messagesPerTurn,
        leaseDuration,
        reapInterval,
        maxAttempts,
        leaseOwner,
        lease);
  }

  /** Transactional mode (the default): the handler runs in the pump's transaction. */
  public BalancerDriverOptions withoutLeaseMode() {
    return new BalancerDriverOptions(
        lockPartition, messagesPerTurn, leaseDuration, reapInterval, maxAttempts, leaseOwner, null);
  }

  /** The options as the driver runs with them: checks the options that need each other. */
  BalancerDriverOptions resolved() {
    if (leaseMode != null && (!lockPartition || messagesPerTurn != 1)) {
      throw new IllegalArgumentException(
          "leaseMode needs lockPartition(true) and messagesPerTurn(1): a lease blocks its key for"
              + " one message");
    }
    if (messagesPerTurn > 1 && !lockPartition) {
      throw new IllegalArgumentException(
          "messagesPerTurn("
              + messagesPerTurn
              + ") needs lockPartition(true): without it a key's messages are not kept in order");
    }
    if (leaseMode != null && maxAttempts == BalancerDriver.DEFAULT_MAX_ATTEMPTS) {
      return withMaxAttempts(BalancerDriver.DEFAULT_LEASE_MODE_MAX_ATTEMPTS);
    }
    return this;
  }

  private static String defaultOwner() {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.io.IOException | RuntimeException e) {
      host = "localhost";
    }
    return ProcessHandle.current().pid() + "@" + host;
  }
}
