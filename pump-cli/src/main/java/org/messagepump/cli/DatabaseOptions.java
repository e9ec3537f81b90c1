package org.messagepump.cli;

import picocli.CommandLine.Option;

/** Where the database is: a JDBC URL with credentials, or (for the demo) none at all. */
final class DatabaseOptions {

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description = "JDBC URL of the PostgreSQL database (env PUMP_JDBC_URL).",
      defaultValue = "${env:PUMP_JDBC_URL}")
  String jdbcUrl;

  @Option(
      names = "--user",
      description = "Database user (env PUMP_DB_USER; default: from the URL or postgres).",
      defaultValue = "${env:PUMP_DB_USER}")
  String user;

  @Option(
      names = "--password",
      description = "Database password (env PUMP_DB_PASSWORD).",
      defaultValue = "${env:PUMP_DB_PASSWORD}",
      arity = "0..1",
      interactive = false)
  String password;

  @Option(names = "--verbose", description = "Print stack traces and debug logs.")
  boolean verbose;

  boolean hasUrl() {
    return jdbcUrl != null && !jdbcUrl.isBlank();
  }
}
