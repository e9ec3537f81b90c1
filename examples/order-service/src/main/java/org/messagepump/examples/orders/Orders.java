package org.messagepump.examples.orders;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.EnqueueResult;
import org.messagepump.spring.boot.TransactionalBalancer;
import org.messagepump.spring.boot.TransactionalCommandQueue;
import org.messagepump.spring.boot.TransactionalEventStore;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/**
 * The order service's data access, written the plain Spring way: JdbcTemplate in
 * {@code @Transactional} methods. Called from a handler, every method joins the delivery's
 * transaction; called from the controller, {@link #place} runs in a transaction of its own that the
 * enqueued command joins.
 */
@Service
public class Orders {

  /** The balancer group shipments go through. */
  public static final String SHIPMENTS = "shipments";

  private final JdbcTemplate jdbc;
  private final TransactionalCommandQueue commands;
  private final TransactionalEventStore events;
  private final TransactionalBalancer balancer;

  Orders(
      JdbcTemplate jdbc,
      TransactionalCommandQueue commands,
      TransactionalEventStore events,
      TransactionalBalancer balancer) {
    this.jdbc = jdbc;
    this.commands = commands;
    this.events = events;
    this.balancer = balancer;
  }

  /** Records the request and enqueues the command: both commit, or neither. */
  @Transactional
  public EnqueueResult place(PlaceOrder order) {
    jdbc.update(
        "INSERT INTO order_requests (order_id) VALUES (?) ON CONFLICT DO NOTHING", order.orderId());
    return commands.enqueue(
        order, EnqueueOptions.defaults().withIdempotencyKey("place-" + order.orderId()));
  }

  /** The command handler's work: the order, its event and its shipment, in the delivery's tx. */
  @Transactional(propagation = Propagation.MANDATORY)
  public void accept(PlaceOrder order) {
    jdbc.update(
        "INSERT INTO orders (order_id, customer, amount_cents) VALUES (?, ?, ?)",
        order.orderId(),
        order.customer(),
        order.amountCents());
    events.append(List.of(new OrderPlaced(order.orderId(), order.customer(), order.amountCents())));
    balancer.storeMessage(
        SHIPMENTS, order.customer(), order.orderId().getBytes(StandardCharsets.UTF_8));
  }

  /** The projection: each customer's total. */
  @Transactional(propagation = Propagation.MANDATORY)
  public void addToTotals(OrderPlaced event) {
    jdbc.update(
        "INSERT INTO customer_totals (customer, orders, amount_cents) VALUES (?, 1, ?)"
            + " ON CONFLICT (customer) DO UPDATE SET orders = customer_totals.orders + 1,"
            + " amount_cents = customer_totals.amount_cents + EXCLUDED.amount_cents",
        event.customer(),
        event.amountCents());
  }

  /** The balanced handler's work: one shipment per order, per customer in order. */
  @Transactional(propagation = Propagation.MANDATORY)
  public void ship(String customer, byte[] orderId) {
    jdbc.update(
        "INSERT INTO shipments (order_id, customer) VALUES (?, ?)",
        new String(orderId, StandardCharsets.UTF_8),
        customer);
  }
}
