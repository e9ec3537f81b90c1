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
 * {@link CommandDriverOptions#withLease(Duration)}: each command is claimed with a lease, and its
 * handler runs with no delivery transaction bound to Spring ({@code ctx.tx()} throws); it uses
 * Spring's ordinary transactions ({@code @Transactional}, JdbcTemplate), which commit on their own,
 * and the command's completion is recorded after the handler, fenced by its lease (docs/leases.md).
 *
 * <pre>{@code
 * @Bean
 * CommandPump exports(ExportService service) {
 *   return CommandPump.of("exports", CommandHandlers.builder()
 *           .on(RunExport.class, (cmd, ctx) -> service.run(cmd, ctx.fencingToken().orElseThrow()))
 *           .build(),
 *       CommandDriverOptions.defaults().withLease(Duration.ofSeconds(30)));
 * }
 * }</pre>
 */
public final class CommandPump extends PumpDefinition {

  private final CommandHandlers handlers;
  private final CommandDriverOptions options;

  private CommandPump(String pumpName, CommandHandlers handlers, CommandDriverOptions options) {
    super(pumpName);
    this.handlers = Objects.requireNonNull(handlers, "handlers");
    this.options = Objects.requireNonNull(options, "options");
  }

  /** A pump named {@code pumpName} running {@code handlers} on the {@link CommandQueue} bean. */
  public static CommandPump of(String pumpName, CommandHandlers handlers) {
    return new CommandPump(pumpName, handlers, CommandDriverOptions.defaults());
  }

  /** As {@link #of(String, CommandHandlers)}, the driver made with {@code options}. */
  public static CommandPump of(
      String pumpName, CommandHandlers handlers, CommandDriverOptions options) {
    return new CommandPump(pumpName, handlers, options);
  }

  /** The driver's options (lease mode when they have a lease). */
  public CommandDriverOptions options() {
    return options;
  }

  @Override
  Driver driver(BeanFactory beans) {
    return beans.getBean(CommandQueue.class).driver(handlers, options);
  }
}
