/**
 * Event streams: the producer ({@code EventStore}), handler registry, driver and operations. Only
 * the API package is exported; {@code org.messagepump.eventstream.internal} stays hidden.
 */
module org.messagepump.eventstream {
  requires transitive org.messagepump.core;
  requires transitive java.sql;
  requires transitive org.jooq;
  requires org.slf4j;
  requires com.fasterxml.jackson.databind;
  requires static micrometer.core;

  exports org.messagepump.eventstream;

  // The migrations, read by Flyway from this module.
  opens db.eventstream;
}
