package org.messagepump.spring.boot;

import java.util.Objects;
import java.util.function.Consumer;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventStore;
import org.springframework.beans.factory.BeanFactory;

/**
 * A pump of one event handler (or projection) reading the {@link EventStore} bean's streams under
 * its handler key, the stable name its checkpoints are kept under.
 *
 * <pre>{@code
 * @Bean
 * EventPump orderTotals(JdbcTemplate jdbc) {
 *   return EventPump.of("order-totals", "order-totals", handlers -> handlers
 *       .on(OrderPlaced.class, (e, ctx) -> jdbc.update("...", e.amount())));
 * }
 * }</pre>
 */
public final class EventPump extends PumpDefinition {

  private final String handlerKey;
  private final Consumer<EventDriver.Builder> handlers;

  private EventPump(String pumpName, String handlerKey, Consumer<EventDriver.Builder> handlers) {
    super(pumpName);
    this.handlerKey = Objects.requireNonNull(handlerKey, "handlerKey");
    this.handlers = Objects.requireNonNull(handlers, "handlers");
  }

  /**
   * A pump named {@code pumpName} for the handler {@code handlerKey}; {@code handlers} registers
   * its handlers ({@code on}, {@code project}) and options on the driver's builder.
   */
  public static EventPump of(
      String pumpName, String handlerKey, Consumer<EventDriver.Builder> handlers) {
    return new EventPump(pumpName, handlerKey, handlers);
  }

  /** The handler key checkpoints are kept under. */
  public String handlerKey() {
    return handlerKey;
  }

  @Override
  Driver driver(BeanFactory beans) {
    EventDriver.Builder b = EventDriver.builder(beans.getBean(EventStore.class));
    b.handlerKey(handlerKey);
    handlers.accept(b);
    return b.build();
  }
}
