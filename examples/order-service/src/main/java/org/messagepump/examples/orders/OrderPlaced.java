package org.messagepump.examples.orders;

/** The event an accepted order appends. */
public record OrderPlaced(String orderId, String customer, long amountCents) {}
