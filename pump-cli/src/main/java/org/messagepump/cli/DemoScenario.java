package org.messagepump.cli;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import javax.sql.DataSource;
import org.messagepump.balancer.BalancedContext;
import org.messagepump.balancer.BalancedMessage;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.balancer.Result;
import org.messagepump.commands.CommandContext;
import org.messagepump.core.BusyException;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Tx;
import org.messagepump.eventstream.EventContext;
import org.messagepump.eventstream.EventStore;

/**
 * The demo's business: customers place orders (commands); the order handler records an event and
 * stores a customer notification in the same transaction; a read model and a projection with its
 * own checkpoint follow the events; notifications go out per customer, fairly and in order, some
 * through a downstream gateway that confirms a hand-off. A small share of failures is injected,
 * chosen by the order number so a run is repeatable.
 */
final class DemoScenario {

  /** Command: a customer places an order. */
  record PlaceOrder(String orderId, int number, String customer, long amount) {}

  /** Event: an order was placed. */
  record OrderPlaced(String orderId, int number, String customer, long amount) {}

  /** A hand-off waiting for the downstream gateway's confirmation. */
  record HandedOff(long messageId, UUID token, String customer, int tries) {
    HandedOff retried() {
      return new HandedOff(messageId, token, customer, tries + 1);
    }
  }

  static final String GROUP = "demo-notifications";
  static final String VIEW_HANDLER = "demo-orders-view";
  static final String TOTALS_HANDLER = "demo-customer-totals";

  static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(
          MessageTypes.builder()
              .register(PlaceOrder.class, "demo.PlaceOrder")
              .register(OrderPlaced.class, "demo.OrderPlaced")
              .build());

  final String run = UUID.randomUUID().toString().substring(0, 8);
  final int orders;
  final int customers;
  final EventStore events;
  final MessageBalancer notifications;
  final BlockingQueue<HandedOff> gateway = new LinkedBlockingQueue<>();

  /**
   * The console demo's failures, for an operator to act on: declined orders (dead letters) go
   * through once retried, one customer's notifications fail until the key is parked (then go
   * through once unparked), and some events park their stream for the read model until resumed.
   */
  final boolean operatorFailures;

  private final Set<Integer> busySeen = ConcurrentHashMap.newKeySet();
  private final Set<Integer> parkedOrders = ConcurrentHashMap.newKeySet();
  private final Set<Long> parkedNotifications = ConcurrentHashMap.newKeySet();
  private final Set<Integer> parkedEvents = ConcurrentHashMap.newKeySet();

  DemoScenario(DataSource ds, int orders) {
    this(ds, orders, false);
  }

  DemoScenario(DataSource ds, int orders, boolean operatorFailures) {
    this.operatorFailures = operatorFailures;
    this.orders = orders;
    this.customers = Math.max(5, Math.min(200, orders / 10));
    this.events = EventStore.create(ds, CODEC);
    this.notifications = MessageBalancer.create(ds, GROUP);
  }

  // ---- failure injection, by order number -------------------------------------------------

  /** Orders that always fail: parked after maxFailures, end up as dead letters. */
  static boolean declined(int n) {
    return n % 100 == 42;
  }

  /** Orders that fail twice, then succeed. */
  static boolean flaky(int n) {
    return n % 50 == 7;
  }

  /** Orders whose first attempt finds the stock system busy. */
  static boolean busyOnce(int n) {
    return n % 40 == 3;
  }

  /** Events the read model fails on once (the stream is postponed, order kept). */
  static boolean viewFailsOnce(int n) {
    return n % 70 == 11;
  }

  /** Console demo: the customer whose notifications fail until its key is parked. */
  static final String STUCK_CUSTOMER = "customer-7";

  /** Console demo: events the read model fails on until their stream is parked. */
  static boolean viewPoison(int n) {
    return n % 150 == 77;
  }

  /** Customers whose notifications go through the downstream gateway (hand-off + confirm). */
  static boolean viaGateway(String customer) {
    return customer.endsWith("0");
  }

  int expectedDeclined() {
    int n = 0;
    for (int i = 0; i < orders; i++) {
      n += declined(i) ? 1 : 0;
    }
    return n;
  }

  PlaceOrder order(int n) {
    return new PlaceOrder(run + "-" + n, n, "customer-" + (n % customers), 10 + (n * 7L) % 990);
  }

  // ---- schema ---------------------------------------------------------------------------------

  static void createSchema(DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA IF NOT EXISTS demo");
      // No unique keys on purpose: a duplicate would show up as a second row and fail a check.
      s.execute(
          "CREATE TABLE IF NOT EXISTS demo.orders_view (order_id text NOT NULL, customer text NOT NULL,"
              + " amount bigint NOT NULL, stream_id bigint NOT NULL, event_offset bigint NOT NULL)");
      s.execute(
          "CREATE TABLE IF NOT EXISTS demo.customer_totals (run text NOT NULL, customer text NOT NULL,"
              + " total bigint NOT NULL, orders int NOT NULL, PRIMARY KEY (run, customer))");
      s.execute(
          "CREATE TABLE IF NOT EXISTS demo.totals_checkpoint (stream_id bigint PRIMARY KEY,"
              + " next_offset bigint NOT NULL)");
      s.execute(
          "CREATE TABLE IF NOT EXISTS demo.notifications (seq bigserial PRIMARY KEY, run text NOT NULL,"
              + " customer text NOT NULL, message_id bigint NOT NULL, via text NOT NULL)");
    }
  }

  // ---- handlers -------------------------------------------------------------------------------

  /** Takes an order: records OrderPlaced and stores the customer's notification, atomically. */
  void placeOrder(PlaceOrder order, CommandContext ctx) throws Exception {
    if (declined(order.number())) {
      if (!operatorFailures) {
        throw new IllegalStateException("payment declined for order " + order.orderId());
      }
      // Console demo: declined until parked; an operator's retry then goes through.
      if (!parkedOrders.contains(order.number())) {
        if (ctx.attempt() >= DemoWorkload.ORDER_MAX_FAILURES) {
          parkedOrders.add(order.number());
        }
        throw new IllegalStateException(
            "payment declined for order " + order.orderId() + " (retry once the card is fixed)");
      }
    }
    if (flaky(order.number()) && ctx.attempt() <= 2) {
      throw new IllegalStateException("stock service timed out (attempt " + ctx.attempt() + ")");
    }
    // Busy does not count a failure (the attempt stays 1), so remember who was busy already.
    if (busyOnce(order.number()) && busySeen.add(order.number())) {
      throw new BusyException("stock system busy");
    }
    Tx tx = ctx.tx();
    events.append(
        tx,
        List.of(
            new OrderPlaced(order.orderId(), order.number(), order.customer(), order.amount())));
    String content = "{\"orderId\":\"" + order.orderId() + "\",\"amount\":" + order.amount() + "}";
    notifications.storeMessage(
        tx.connection(),
        order.customer(),
        content.getBytes(StandardCharsets.UTF_8),
        "{\"run\":\"" + run + "\"}");
  }

  /** The read model: one row per placed order, written with the checkpoint. */
  void project(OrderPlaced e, EventContext ctx) throws Exception {
    if (viewFailsOnce(e.number()) && ctx.attempt() == 1) {
      throw new IllegalStateException("read model store hiccup");
    }
    if (operatorFailures && viewPoison(e.number()) && !parkedEvents.contains(e.number())) {
      if (ctx.attempt() >= DemoWorkload.VIEW_MAX_FAILURES) {
        parkedEvents.add(e.number());
      }
      throw new IllegalStateException(
          "read model rejects order " + e.orderId() + " (resume once the schema is fixed)");
    }
    try (PreparedStatement ps =
        ctx.tx()
            .connection()
            .prepareStatement(
                "INSERT INTO demo.orders_view (order_id, customer, amount, stream_id, event_offset)"
                    + " VALUES (?, ?, ?, ?, ?)")) {
      ps.setString(1, e.orderId());
      ps.setString(2, e.customer());
      ps.setLong(3, e.amount());
      ps.setLong(4, ctx.streamId());
      ps.setLong(5, ctx.offset());
      ps.executeUpdate();
    }
  }

  /**
   * A projection that keeps its own checkpoint (as if in another store): it returns the offset it
   * holds, so the pump's checkpoint follows the projection's, even backwards.
   */
  long total(OrderPlaced e, EventContext ctx) throws SQLException {
    Connection c = ctx.tx().connection();
    long held = 0;
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT next_offset FROM demo.totals_checkpoint WHERE stream_id = ? FOR UPDATE")) {
      ps.setLong(1, ctx.streamId());
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          held = rs.getLong(1);
        }
      }
    }
    if (held != ctx.offset()) {
      return held; // already applied (redelivery) or a gap: tell the pump where we really are
    }
    if (e.orderId().startsWith(run)) {
      try (PreparedStatement ps =
          c.prepareStatement(
              "INSERT INTO demo.customer_totals (run, customer, total, orders) VALUES (?, ?, ?, 1)"
                  + " ON CONFLICT (run, customer) DO UPDATE SET total = customer_totals.total"
                  + " + EXCLUDED.total, orders = customer_totals.orders + 1")) {
        ps.setString(1, run);
        ps.setString(2, e.customer());
        ps.setLong(3, e.amount());
        ps.executeUpdate();
      }
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO demo.totals_checkpoint (stream_id, next_offset) VALUES (?, ?)"
                + " ON CONFLICT (stream_id) DO UPDATE SET next_offset = EXCLUDED.next_offset")) {
      ps.setLong(1, ctx.streamId());
      ps.setLong(2, ctx.offset() + 1);
      ps.executeUpdate();
    }
    return ctx.offset() + 1;
  }

  /** Sends one notification: directly (recorded now) or through the gateway (hand-off). */
  Result notify(BalancedMessage m, BalancedContext ctx) throws SQLException {
    if (operatorFailures
        && m.partitionKey().equals(STUCK_CUSTOMER)
        && !parkedNotifications.contains(m.id())) {
      if (ctx.attempt() >= DemoWorkload.NOTIFY_MAX_FAILURES) {
        parkedNotifications.add(m.id());
      }
      throw new IllegalStateException(
          "mail server refuses " + STUCK_CUSTOMER + " (unpark once the mailbox is fixed)");
    }
    if (viaGateway(m.partitionKey())) {
      gateway.add(new HandedOff(m.id(), m.handoffToken(), m.partitionKey(), 0));
      return Result.handoff();
    }
    recordNotification(ctx.tx().connection(), m.partitionKey(), m.id(), "direct");
    return Result.ok();
  }

  void recordNotification(Connection c, String customer, long messageId, String via)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO demo.notifications (run, customer, message_id, via) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, run);
      ps.setString(2, customer);
      ps.setLong(3, messageId);
      ps.setString(4, via);
      ps.executeUpdate();
    }
  }
}
