package org.messagepump.spring.boot;

import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.EnqueueResult;
import org.messagepump.commands.NewCommand;
import org.messagepump.spring.boot.internal.CallerTransaction;

/**
 * Enqueues commands in the caller's Spring transaction: called from a {@code @Transactional} method
 * (or from a handler), the command commits or rolls back with it, and no connection appears in your
 * code. Called outside any transaction, each call commits by itself.
 *
 * <pre>{@code
 * @Transactional
 * public void checkout(Cart cart) {
 *   carts.save(cart);                                  // the same transaction
 *   commands.enqueue(new PlaceOrder(cart.id(), cart.total()));
 * }
 * }</pre>
 */
public final class TransactionalCommandQueue {

  private final CommandQueue queue;
  private final DataSource dataSource;

  /** Enqueues into {@code queue}, joining transactions Spring holds on {@code dataSource}. */
  public TransactionalCommandQueue(CommandQueue queue, DataSource dataSource) {
    this.queue = Objects.requireNonNull(queue, "queue");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
  }

  /** The queue underneath (depth, dead letters, its codec). */
  public CommandQueue queue() {
    return queue;
  }

  /** Enqueues a command, due now. */
  public EnqueueResult enqueue(Object command) {
    return enqueue(command, EnqueueOptions.defaults());
  }

  /** Enqueues a command with options (idempotency key, delay, correlation, headers). */
  public EnqueueResult enqueue(Object command, EnqueueOptions options) {
    return CallerTransaction.run(
        dataSource,
        tx -> queue.enqueue(tx, command, options),
        () -> queue.enqueue(command, options));
  }

  /** Enqueues many commands, all or none. */
  public List<EnqueueResult> enqueueAll(List<? extends NewCommand> commands) {
    return CallerTransaction.run(
        dataSource, tx -> queue.enqueueAll(tx, commands), () -> queue.enqueueAll(commands));
  }
}
