package org.messagepump.cli;

import java.util.ArrayList;
import java.util.List;
import org.jooq.Record3;
import org.jooq.Table;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.messagepump.core.Tx;

/**
 * The tables {@code pump checkpoints reset --truncate} empties: each name resolved by PostgreSQL as
 * SQL would read it ({@code to_regclass}, the name bound, so the search path and quoting rules
 * apply), and emptied by its resolved, quoted schema and name.
 */
final class ReadModelTables {

  // Plain SQL: the catalog tables are not in any generated jOOQ schema here. The name is bound.
  // Covered by PumpCliIT.
  private static final String RESOLVE =
      "SELECT n.nspname::text, c.relname::text, c.relkind::text"
          + " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
          + " WHERE c.oid = to_regclass(?)";

  private final List<Table<?>> tables;

  private ReadModelTables(List<Table<?>> tables) {
    this.tables = tables;
  }

  /**
   * Resolves every name in {@code tx}; a name that is malformed, unknown or not a table is a {@link
   * CliException} with exit code 2 (nothing was written; the transaction rolls back with it).
   */
  static ReadModelTables resolve(Tx tx, List<String> names) {
    List<Table<?>> tables = new ArrayList<>();
    for (String name : names) {
      if (name.isBlank() || name.indexOf('\0') >= 0) {
        throw new CliException("--truncate needs a table name: '" + name + "'", 2);
      }
      Record3<String, String, String> r;
      try {
        r =
            tx.dsl()
                .resultQuery(RESOLVE, name)
                .coerce(
                    DSL.field("nspname", SQLDataType.VARCHAR),
                    DSL.field("relname", SQLDataType.VARCHAR),
                    DSL.field("relkind", SQLDataType.VARCHAR))
                .fetchOne();
      } catch (DataAccessException e) {
        // to_regclass rejects a name it cannot parse (say, too many dots) with an error.
        throw new CliException(
            "--truncate " + name + ": not a table name (" + e.sqlState() + ")", 2);
      }
      if (r == null) {
        throw new CliException("--truncate " + name + ": no such table", 2);
      }
      if (!"r".equals(r.value3()) && !"p".equals(r.value3())) {
        throw new CliException("--truncate " + name + ": not a table", 2);
      }
      tables.add(DSL.table(DSL.name(r.value1(), r.value2())));
    }
    return new ReadModelTables(tables);
  }

  /** Empties the tables in {@code tx}, in one statement. */
  void truncate(Tx tx) {
    if (!tables.isEmpty()) {
      tx.dsl().truncate(tables).execute();
    }
  }
}
