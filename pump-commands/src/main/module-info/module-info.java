/**
 * The command queue: its producer ({@code CommandQueue}), handler registry, driver and operations.
 * Only the API package is exported; {@code org.messagepump.commands.internal} stays hidden.
 */
module org.messagepump.commands {
  requires transitive org.messagepump.core;
  requires transitive java.sql;
  requires transitive org.jooq;
  requires java.management;
  requires org.slf4j;
  requires com.fasterxml.jackson.databind;
  requires com.cronutils;
  requires static micrometer.core;

  exports org.messagepump.commands;

  // The migrations, read by Flyway from this module.
  opens db.commandqueue;
}
