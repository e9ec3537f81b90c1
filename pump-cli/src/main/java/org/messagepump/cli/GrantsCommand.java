package org.messagepump.cli;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.commands.CommandOperations;
import org.messagepump.eventstream.EventOperations;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code pump grants}: the exact GRANT statements a DML-only role needs to run pumps and producers
 * on the library's schemas (migrations stay with the owner role). Prints them; {@code --apply} runs
 * them in one transaction.
 */
@Command(
    name = "grants",
    mixinStandardHelpOptions = true,
    description = {
      "Print (or --apply) the GRANTs a DML-only role needs.",
      "The GRANT statements on the library's schemas; run migrations as the owner, and pumps"
          + " and producers as this role."
    })
final class GrantsCommand implements Callable<Integer> {

  /** A data source never connected to: the operators compute the statements without a database. */
  private static final PGSimpleDataSource UNCONNECTED = new PGSimpleDataSource();

  @Mixin DatabaseOptions db;

  @Option(
      names = "--role",
      required = true,
      paramLabel = "ROLE",
      description = "The role to grant to (must exist).")
  String role;

  @Mixin DriverSelection drivers;

  @Option(
      names = "--apply",
      description = "Run the statements (as the connecting user, who must own the schemas).")
  boolean apply;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws SQLException {
    List<String> statements = new ArrayList<>();
    try {
      for (DriverName d : drivers.selected(spec)) {
        statements.addAll(statements(d, drivers.schemaOf(d)));
      }
    } catch (IllegalArgumentException | NullPointerException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage());
    }
    PrintWriter out = spec.commandLine().getOut();
    if (!apply) {
      statements.forEach(sql -> out.println(sql + ";"));
      return 0;
    }
    try (Database database = Database.open(db, false, 1, spec.commandLine().getErr());
        Connection c = database.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        for (String sql : statements) {
          st.execute(sql);
        }
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw e;
      }
    }
    out.println("granted " + statements.size() + " privileges to " + role);
    return 0;
  }

  private List<String> statements(DriverName d, String name) {
    return switch (d) {
      case commands -> CommandOperations.of(UNCONNECTED, name).grantStatements(role);
      case events -> EventOperations.of(UNCONNECTED, name).grantStatements(role);
      case balancer -> BalancerOperations.of(UNCONNECTED, name).grantStatements(role);
    };
  }
}
