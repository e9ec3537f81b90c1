package org.messagepump.examples.orders;

import org.messagepump.balancer.BalancedHandlers;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.core.MessageTypes;
import org.messagepump.eventstream.EventHandlers;
import org.messagepump.spring.boot.BalancedPump;
import org.messagepump.spring.boot.CommandPump;
import org.messagepump.spring.boot.EventPump;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * A small order service on the messagepump starter: {@code POST /orders} enqueues a {@link
 * PlaceOrder} command in the request's transaction; the {@code orders} pump accepts it (an order
 * row, an {@link OrderPlaced} event and a shipment message, all in the delivery's transaction); the
 * {@code order-totals} projection sums each customer's orders; the {@code shipping} pump ships per
 * customer, in order.
 */
@SpringBootApplication
public class OrderServiceApplication {

  /** Starts the service. */
  public static void main(String[] args) {
    SpringApplication.run(OrderServiceApplication.class, args);
  }

  @Bean
  MessageTypes messageTypes() {
    return MessageTypes.builder()
        .register(PlaceOrder.class, "orders.PlaceOrder")
        .register(OrderPlaced.class, "orders.OrderPlaced")
        .build();
  }

  @Bean
  CommandPump ordersPump(Orders orders) { // commands: messagepump.pumps.orders.*
    return CommandPump.of(
        "orders",
        CommandHandlers.builder().on(PlaceOrder.class, (cmd, ctx) -> orders.accept(cmd)).build());
  }

  @Bean
  EventPump orderTotalsPump(Orders orders) { // a projection under its handler key
    return EventPump.of(
        "order-totals",
        "order-totals",
        EventHandlers.builder()
            .on(OrderPlaced.class, (event, ctx) -> orders.addToTotals(event))
            .build());
  }

  @Bean
  BalancedPump shippingPump(Orders orders) { // per-customer FIFO, fair across customers
    return BalancedPump.of(
        "shipping",
        Orders.SHIPMENTS,
        BalancedHandlers.builder()
            .on(
                (message, ctx) -> {
                  orders.ship(message.partitionKey(), message.content());
                  return Result.ok();
                })
            .build());
  }
}
