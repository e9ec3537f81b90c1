/**
 * Partition-balanced messages: the producer ({@code MessageBalancer}), handler registry, driver and
 * operations. The API package and its values ({@code org.messagepump.balancer.model}) are
 * exported; {@code org.messagepump.balancer.internal} stays hidden.
 */
module org.messagepump.balancer {
  requires transitive org.messagepump.core;
  requires transitive java.sql;
  requires transitive org.jooq;
  requires org.slf4j;
  requires com.fasterxml.jackson.databind;
  requires static micrometer.core;

  exports org.messagepump.balancer;
  exports org.messagepump.balancer.model;

  // The migrations, read by Flyway from this module.
  opens db.balancer;
}
