package org.messagepump.spring.boot;

import java.util.Objects;
import java.util.function.Consumer;
import org.messagepump.balancer.BalancedHandler;
import org.messagepump.balancer.BalancerDriver;
import org.messagepump.core.spi.Driver;
import org.springframework.beans.factory.BeanFactory;

/**
 * A pump of one partition group's messages: per-key FIFO, fair rotation across keys.
 *
 * <pre>{@code
 * @Bean
 * BalancedPump shipping(Warehouse warehouse) {
 *   return BalancedPump.of("shipping", "warehouses",
 *       (message, ctx) -> warehouse.ship(message.content()) ? Result.ok() : Result.requeue());
 * }
 * }</pre>
 */
public final class BalancedPump extends PumpDefinition {

  private final String group;
  private final BalancedHandler handler;
  private final Consumer<BalancerDriver.Builder> options;

  private BalancedPump(
      String pumpName,
      String group,
      BalancedHandler handler,
      Consumer<BalancerDriver.Builder> options) {
    super(pumpName);
    this.group = Objects.requireNonNull(group, "group");
    this.handler = Objects.requireNonNull(handler, "handler");
    this.options = Objects.requireNonNull(options, "options");
  }

  /** A pump named {@code pumpName} handing the messages of {@code group} to {@code handler}. */
  public static BalancedPump of(String pumpName, String group, BalancedHandler handler) {
    return new BalancedPump(pumpName, group, handler, b -> {});
  }

  /** As {@link #of(String, String, BalancedHandler)}; {@code options} sets the driver's options. */
  public static BalancedPump of(
      String pumpName,
      String group,
      BalancedHandler handler,
      Consumer<BalancerDriver.Builder> options) {
    return new BalancedPump(pumpName, group, handler, options);
  }

  /** The partition group. */
  public String group() {
    return group;
  }

  @Override
  Driver driver(BeanFactory beans) {
    BalancerDriver.Builder b =
        beans.getBean(TransactionalBalancer.class).balancer(group).driver(handler);
    options.accept(b);
    return b.build();
  }
}
