/**
 * Partition-balanced messages: the producer ({@code MessageBalancer}), handler registry, driver and
 * operations. Only the API package is exported; {@code org.messagepump.balancer.internal} stays
 * hidden.
 */
module org.messagepump.balancer {
  requires transitive org.messagepump.core;
  requires transitive java.sql;
  requires transitive org.jooq;
  requires org.slf4j;
  requires com.fasterxml.jackson.databind;
  requires static micrometer.core;

  exports org.messagepump.balancer;

  // The migrations, read by Flyway from this module.
  opens db.balancer;
}
