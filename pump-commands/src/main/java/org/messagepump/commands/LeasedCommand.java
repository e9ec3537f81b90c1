package org.messagepump.commands;

import java.time.Instant;
import java.util.UUID;

/**
 * A pending command running under a lease (lease mode, docs/leases.md): a pump of {@code holder}
 * claimed it and its handler runs; the lease is extended while the holder's process works and
 * reaches the database. Once {@code leaseExpiresAt} passes unextended, the command is due again and
 * its attempt counts as a failure.
 *
 * @param messageId the command's id
 * @param type the command type name
 * @param holder the process holding the lease ({@code pid@host} as its JVM names itself)
 * @param leaseExpiresAt when the lease runs out unless extended (database clock)
 * @param attempt the attempt that runs (1 for the first)
 * @param fencingToken the claim's fencing token
 * @param priority the command's priority ({@link EnqueueOptions#withPriority})
 */
public record LeasedCommand(
    UUID messageId,
    String type,
    String holder,
    Instant leaseExpiresAt,
    int attempt,
    long fencingToken,
    int priority) {

  /** A leased command of the default priority. */
  public LeasedCommand(
      UUID messageId,
      String type,
      String holder,
      Instant leaseExpiresAt,
      int attempt,
      long fencingToken) {
    this(
        messageId,
        type,
        holder,
        leaseExpiresAt,
        attempt,
        fencingToken,
        EnqueueOptions.DEFAULT_PRIORITY);
  }
}
