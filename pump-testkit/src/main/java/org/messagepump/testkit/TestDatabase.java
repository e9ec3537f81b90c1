package org.messagepump.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * A fresh PostgreSQL database for one test class, with a default HikariCP pool and the means to
 * open more pools (one per simulated process) and to run quick SQL in tests.
 */
public final class TestDatabase implements AutoCloseable {

  /** Pool size of {@link #dataSource()}. */
  public static final int DEFAULT_POOL_SIZE = 24;

  private final PostgresServer server;
  private final String name;
  private final List<HikariDataSource> pools = new ArrayList<>();
  private final HikariDataSource dataSource;

  TestDatabase(PostgresServer server, String name) {
    this.server = server;
    this.name = name;
    this.dataSource = newDataSource("default", DEFAULT_POOL_SIZE);
  }

  /** The database name. */
  public String name() {
    return name;
  }

  /** The server this database lives on. */
  public PostgresServer server() {
    return server;
  }

  /** JDBC URL of this database. */
  public String jdbcUrl() {
    return server.jdbcUrl(name);
  }

  /** The default pool of this test class ({@value #DEFAULT_POOL_SIZE} connections). */
  public DataSource dataSource() {
    return dataSource;
  }

  /**
   * A new HikariCP pool on this database, closed with the test class. Its connections carry the
   * application name {@code applicationName}, so a test can find (and terminate) their backends.
   */
  public synchronized HikariDataSource newDataSource(String applicationName, int poolSize) {
    return newDataSource(applicationName, poolSize, java.time.Duration.ofSeconds(10));
  }

  /**
   * As {@link #newDataSource(String, int)}, with HikariCP's connection timeout: how long {@code
   * getConnection()} waits before it throws. While the server is down HikariCP retries connecting
   * after 10 ms, doubling the pause up to 5 s, for as long as a thread waits for a connection.
   */
  public synchronized HikariDataSource newDataSource(
      String applicationName, int poolSize, java.time.Duration connectionTimeout) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl());
    config.setUsername(server.user());
    config.setPassword(server.password());
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(0);
    config.setPoolName("test-" + applicationName);
    config.setConnectionTimeout(connectionTimeout.toMillis());
    config.addDataSourceProperty("ApplicationName", applicationName);
    HikariDataSource ds = new HikariDataSource(config);
    pools.add(ds);
    return ds;
  }

  /**
   * Creates a login role with {@code password} and no privileges beyond CONNECT on this database
   * (the caller grants what the test needs). Dropped with the database's server only by name, so
   * tests use names unique to their class.
   */
  public void createLoginRole(String role, String password) {
    try (Connection c = server.connect(name);
        Statement s = c.createStatement()) {
      // Identifiers cannot be bound; the role name is quoted by PostgreSQL's quote_ident and the
      // password by quote_literal, both on the server.
      String sql;
      try (var ps =
          c.prepareStatement(
              "SELECT format('DROP ROLE IF EXISTS %I', ?::text),"
                  + " format('CREATE ROLE %I LOGIN PASSWORD %L', ?::text, ?::text),"
                  + " format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), ?::text)")) {
        ps.setString(1, role);
        ps.setString(2, role);
        ps.setString(3, password);
        ps.setString(4, role);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          try {
            s.execute(rs.getString(1));
          } catch (SQLException e) {
            // still owns objects in another test database: keep it, reset its password below
            s.execute(rs.getString(2).replaceFirst("^CREATE ROLE", "ALTER ROLE"));
            s.execute(rs.getString(3));
            return;
          }
          s.execute(rs.getString(2));
          s.execute(rs.getString(3));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: creating role " + role + " failed", e);
    }
  }

  /** A new HikariCP pool on this database logged in as {@code user}, closed with the class. */
  public synchronized HikariDataSource newDataSource(
      String applicationName, int poolSize, String user, String password) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl());
    config.setUsername(user);
    config.setPassword(password);
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(0);
    config.setPoolName("test-" + applicationName);
    config.addDataSourceProperty("ApplicationName", applicationName);
    HikariDataSource ds = new HikariDataSource(config);
    pools.add(ds);
    return ds;
  }

  /** Runs one statement on a fresh connection (for set-up and assertions in tests). */
  public void execute(String sql) {
    try (Connection c = server.connect(name);
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: " + sql + " failed", e);
    }
  }

  /** Runs a query whose first column of the first row is a number, and returns it as a long. */
  public long queryLong(String sql) {
    try (Connection c = server.connect(name);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      if (!rs.next()) {
        throw new IllegalStateException("testkit: no row from " + sql);
      }
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: " + sql + " failed", e);
    }
  }

  /**
   * Runs a query and returns the first column of its first row as text ({@code null} when that
   * value is null, or when there is no row).
   */
  public String queryString(String sql) {
    try (Connection c = server.connect(name);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: " + sql + " failed", e);
    }
  }

  /**
   * Terminates every backend of this database whose application name is {@code applicationName} and
   * returns how many were terminated.
   */
  public int terminateBackends(String applicationName) {
    try (Connection c = server.connect(name);
        var ps =
            c.prepareStatement(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                    + " WHERE datname = current_database() AND application_name = ?"
                    + " AND pid <> pg_backend_pid()")) {
      ps.setString(1, applicationName);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: terminating backends failed", e);
    }
  }

  /** Closes every pool and drops the database. */
  @Override
  public synchronized void close() {
    for (HikariDataSource ds : pools) {
      ds.close();
    }
    pools.clear();
    server.dropDatabase(name);
  }
}
