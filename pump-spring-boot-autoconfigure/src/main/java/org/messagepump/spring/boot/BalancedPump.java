package org.messagepump.spring.boot;

import java.util.Objects;
import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.BalancerDriverOptions;
import org.messagepump.core.spi.Driver;
import org.springframework.beans.factory.BeanFactory;

/**
 * A pump of one partition group's messages: per-key FIFO, fair rotation across keys.
 *
 * <pre>{@code
 * @Bean
 * BalancedPump shipping(Warehouse warehouse) {
 *   return BalancedPump.of("shipping", "warehouses", BalancedHandlers.builder()
 *       .on((message, ctx) -> warehouse.ship(message.content()) ? Result.ok() : Result.requeue())
 *       .build());
 * }
 * }</pre>
 */
public final class BalancedPump extends PumpDefinition {

  private final String group;
  private final BalancedHandlers handlers;
  private final BalancerDriverOptions options;

  private BalancedPump(
      String pumpName, String group, BalancedHandlers handlers, BalancerDriverOptions options) {
    super(pumpName);
    this.group = Objects.requireNonNull(group, "group");
    this.handlers = Objects.requireNonNull(handlers, "handlers");
    this.options = Objects.requireNonNull(options, "options");
  }

  /** A pump named {@code pumpName} handing the messages of {@code group} to {@code handlers}. */
  public static BalancedPump of(String pumpName, String group, BalancedHandlers handlers) {
    return new BalancedPump(pumpName, group, handlers, BalancerDriverOptions.defaults());
  }

  /** As {@link #of(String, String, BalancedHandlers)}, the driver made with {@code options}. */
  public static BalancedPump of(
      String pumpName, String group, BalancedHandlers handlers, BalancerDriverOptions options) {
    return new BalancedPump(pumpName, group, handlers, options);
  }

  /** The partition group. */
  public String group() {
    return group;
  }

  @Override
  Driver driver(BeanFactory beans) {
    return beans.getBean(TransactionalBalancer.class).balancer(group).driver(handlers, options);
  }
}
