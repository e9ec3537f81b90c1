package org.messagepump.examples.orders;

/** The command {@code POST /orders} enqueues. */
public record PlaceOrder(String orderId, String customer, long amountCents) {}
