package org.messagepump.spring.boot;

import java.util.Objects;
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
 */
public final class CommandPump extends PumpDefinition {

  private final CommandHandlers handlers;

  private CommandPump(String pumpName, CommandHandlers handlers) {
    super(pumpName);
    this.handlers = Objects.requireNonNull(handlers, "handlers");
  }

  /** A pump named {@code pumpName} running {@code handlers} on the {@link CommandQueue} bean. */
  public static CommandPump of(String pumpName, CommandHandlers handlers) {
    return new CommandPump(pumpName, handlers);
  }

  @Override
  Driver driver(BeanFactory beans) {
    return beans.getBean(CommandQueue.class).driver(handlers);
  }
}
