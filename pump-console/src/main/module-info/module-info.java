/**
 * The operations console: a servlet, standalone on Jetty or mounted by an application. Only the API
 * package is exported; {@code org.messagepump.console.internal} stays hidden.
 */
module org.messagepump.console {
  requires transitive org.messagepump.core;
  requires transitive org.messagepump.commands;
  requires transitive org.messagepump.eventstream;
  requires transitive org.messagepump.balancer;
  requires transitive jakarta.servlet;
  requires transitive java.sql;
  requires java.logging;
  requires org.slf4j;
  requires com.fasterxml.jackson.databind;
  requires org.eclipse.jetty.server;
  requires org.eclipse.jetty.ee10.servlet;
  requires org.eclipse.jetty.util;
  requires static micrometer.core;

  exports org.messagepump.console;

  // The audit table's migrations, read by Flyway from this module.
  opens db.pumpconsole;
}
