package org.messagepump.spring.boot;

import java.time.Duration;
import java.util.Objects;
import org.messagepump.commands.CommandDriverOptions;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.spi.Driver;
import org.springframework.beans.factory.BeanFactory;

/**
 * A pump of the command queue's commands of the handlers' types.
 *
 * <pre>{@code
 * @Bean
 * CommandPump orders(OrderService service) {
 *   return CommandPump.of("orders", CommandHandlers.builder()
 *       .on(PlaceOrder.class, (cmd, ctx) -> service.place(cmd))   // joins the delivery's tx
 *       .build());
 * }
 * }</pre>
 *
 * <p>For handlers that run for long (seconds to minutes), declare the pump in lease mode with
 * {@link #leased(Duration)}: each command is claimed with a lease, and its handler runs with no
 * delivery transaction; it uses Spring's ordinary transactions ({@code @Transactional},
 * JdbcTemplate), which commit on their own (docs/leases.md).
 *
 * <pre>{@code
 * @Bean
 * CommandPump exports(ExportService service) {
 *   return CommandPump.of("exports", CommandHandlers.builder()
 *           .on(RunExport.class, (cmd, ctx) -> service.run(cmd, ctx.fencingToken().orElseThrow()))
 *           .build())
 *       .leased(Duration.ofSeconds(30));
 * }
 * }</pre>
 */
public final class CommandPump extends PumpDefinition {

  private final CommandHandlers handlers;
  private final Duration lease; // null: transactional mode

  private CommandPump(String pumpName, CommandHandlers handlers, Duration lease) {
    super(pumpName);
    this.handlers = Objects.requireNonNull(handlers, "handlers");
    this.lease = lease;
  }

  /** A pump named {@code pumpName} running {@code handlers} on the {@link CommandQueue} bean. */
  public static CommandPump of(String pumpName, CommandHandlers handlers) {
    return new CommandPump(pumpName, handlers, null);
  }

  /**
   * This pump in lease mode, with leases of {@code lease} ({@link CommandDriverOptions#withLease}):
   * its handlers get no delivery transaction bound to Spring ({@code ctx.tx()} throws), so each
   * write is its own Spring transaction, committed when its {@code @Transactional} method returns;
   * the command's completion is recorded after the handler, fenced by its lease. {@code lease} must
   * be between {@link CommandDriverOptions#MIN_LEASE} and {@link CommandDriverOptions#MAX_LEASE},
   * else {@link IllegalArgumentException}.
   */
  public CommandPump leased(Duration lease) {
    if (lease == null
        || lease.compareTo(CommandDriverOptions.MIN_LEASE) < 0
        || lease.compareTo(CommandDriverOptions.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "lease of pump '"
              + pumpName()
              + "' must be at least "
              + CommandDriverOptions.MIN_LEASE
              + " and at most "
              + CommandDriverOptions.MAX_LEASE
              + ": "
              + lease);
    }
    return new CommandPump(pumpName(), handlers, lease);
  }

  /** The lease of lease mode; null in transactional mode (the default). */
  public Duration lease() {
    return lease;
  }

  @Override
  Driver driver(BeanFactory beans) {
    CommandQueue queue = beans.getBean(CommandQueue.class);
    return lease == null
        ? queue.driver(handlers)
        : queue.driver(handlers, CommandDriverOptions.defaults().withLease(lease));
  }
}
