package org.messagepump.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * The database a command works on: a HikariCP pool on the given URL, or an embedded PostgreSQL in a
 * temporary folder (removed at close) when no URL is given and the command allows it.
 */
final class Database implements AutoCloseable {

  private final HikariDataSource pool;
  private final EmbeddedPostgres embedded;
  private final Path folder;
  private final String description;

  private Database(
      HikariDataSource pool, EmbeddedPostgres embedded, Path folder, String description) {
    this.pool = pool;
    this.embedded = embedded;
    this.folder = folder;
    this.description = description;
  }

  /** Opens the database; with no URL starts an embedded server if {@code embeddedAllowed}. */
  static Database open(
      DatabaseOptions options, boolean embeddedAllowed, int poolSize, PrintWriter err) {
    return open(options, embeddedAllowed, poolSize, err, java.util.Map.of());
  }

  /** As above; {@code serverConfig} adds settings to an embedded server (ignored for a URL). */
  static Database open(
      DatabaseOptions options,
      boolean embeddedAllowed,
      int poolSize,
      PrintWriter err,
      java.util.Map<String, String> serverConfig) {
    if (options.hasUrl()) {
      return new Database(
          pool(options.jdbcUrl, options.user, options.password, poolSize),
          null,
          null,
          options.jdbcUrl);
    }
    if (!embeddedAllowed) {
      throw new CliException("--jdbc-url is required (or set PUMP_JDBC_URL)", 2);
    }
    Path folder = null;
    EmbeddedPostgres pg = null;
    try {
      folder = Files.createTempDirectory("pump-embedded-pg");
      err.println("pump: starting an embedded PostgreSQL in " + folder + " (removed at exit)");
      err.flush();
      EmbeddedPostgres.Builder builder =
          EmbeddedPostgres.builder()
              .setDataDirectory(folder.resolve("data"))
              .setCleanDataDirectory(true)
              .setServerConfig("max_connections", "200");
      serverConfig.forEach(builder::setServerConfig);
      pg = builder.start();
      String url = pg.getJdbcUrl("postgres", "postgres");
      return new Database(
          pool(url, "postgres", "postgres", poolSize), pg, folder, "embedded PostgreSQL");
    } catch (IOException | RuntimeException e) {
      closeEmbedded(pg, folder);
      throw new CliException("could not start the embedded PostgreSQL: " + e.getMessage(), 1, e);
    }
  }

  private static HikariDataSource pool(String url, String user, String password, int poolSize) {
    return pool(url, user, password, poolSize, "pump-cli");
  }

  /**
   * A pool of {@code poolSize} connections on {@code url}, named {@code name} (also its
   * connections' {@code application_name}).
   */
  static HikariDataSource pool(
      String url, String user, String password, int poolSize, String name) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    if (user != null && !user.isBlank()) {
      config.setUsername(user);
    }
    if (password != null) {
      config.setPassword(password);
    }
    config.setPoolName(name);
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(10_000);
    config.setInitializationFailTimeout(1);
    config.addDataSourceProperty("ApplicationName", name);
    config.addDataSourceProperty("connectTimeout", "5");
    try {
      return new HikariDataSource(config);
    } catch (HikariPool.PoolInitializationException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new CliException(
          "cannot reach the database at " + url + ": " + cause.getMessage(), 1, e);
    } catch (RuntimeException e) {
      throw new CliException("cannot use the database at " + url + ": " + e.getMessage(), 1, e);
    }
  }

  DataSource dataSource() {
    return pool;
  }

  /** The pool, for commands that need to size or inspect it. */
  HikariDataSource pool() {
    return pool;
  }

  String description() {
    return description;
  }

  boolean isEmbedded() {
    return embedded != null;
  }

  @Override
  public void close() {
    pool.close();
    closeEmbedded(embedded, folder);
  }

  private static void closeEmbedded(EmbeddedPostgres pg, Path folder) {
    try {
      if (pg != null) {
        pg.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      if (folder != null) {
        try (Stream<Path> paths = Files.walk(folder)) {
          paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
          // best effort: the folder is under the system temp directory
        }
      }
    }
  }
}
