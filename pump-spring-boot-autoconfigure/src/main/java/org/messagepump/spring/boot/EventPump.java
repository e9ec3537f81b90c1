package org.messagepump.spring.boot;

import java.util.Objects;
import org.messagepump.core.spi.Driver;
import org.messagepump.eventstream.EventDriverOptions;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.eventstream.EventStore;
import org.springframework.beans.factory.BeanFactory;

/**
 * A pump of one event handler (or projection) reading the {@link EventStore} bean's streams under
 * its handler key, the stable name its checkpoints are kept under.
 *
 * <pre>{@code
 * @Bean
 * EventPump orderTotals(JdbcTemplate jdbc) {
 *   return EventPump.of("order-totals", "order-totals", EventHandlers.builder()
 *       .on(OrderPlaced.class, (e, ctx) -> jdbc.update("...", e.amount()))
 *       .build());
 * }
 * }</pre>
 */
public final class EventPump extends PumpDefinition {

  private final String handlerKey;
  private final EventHandlers handlers;
  private final EventDriverOptions options;

  private EventPump(
      String pumpName, String handlerKey, EventHandlers handlers, EventDriverOptions options) {
    super(pumpName);
    this.handlerKey = Objects.requireNonNull(handlerKey, "handlerKey");
    this.handlers = Objects.requireNonNull(handlers, "handlers");
    this.options = Objects.requireNonNull(options, "options");
  }

  /**
   * A pump named {@code pumpName} running {@code handlers} for the handler {@code handlerKey}, with
   * {@link EventDriverOptions#defaults()}.
   */
  public static EventPump of(String pumpName, String handlerKey, EventHandlers handlers) {
    return of(pumpName, handlerKey, handlers, EventDriverOptions.defaults());
  }

  /**
   * A pump named {@code pumpName} running {@code handlers} for the handler {@code handlerKey}, with
   * {@code options} (concurrency, start position, acquisition waits).
   */
  public static EventPump of(
      String pumpName, String handlerKey, EventHandlers handlers, EventDriverOptions options) {
    return new EventPump(pumpName, handlerKey, handlers, options);
  }

  /** The handler key checkpoints are kept under. */
  public String handlerKey() {
    return handlerKey;
  }

  @Override
  Driver driver(BeanFactory beans) {
    return beans.getBean(EventStore.class).driver(handlerKey, handlers, options);
  }
}
