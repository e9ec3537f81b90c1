package org.messagepump.spring.boot;

import org.messagepump.testkit.PostgresServer;
import org.springframework.test.context.DynamicPropertyRegistry;

/** Points a Spring Boot test application's datasource at a database of the test server. */
public final class SpringTestDatabase {

  private SpringTestDatabase() {}

  /** Registers {@code database} as {@code spring.datasource.*} (from a DynamicPropertySource). */
  public static void register(DynamicPropertyRegistry registry, String database) {
    PostgresServer server = PostgresServer.get();
    registry.add("spring.datasource.url", () -> server.jdbcUrl(database));
    registry.add("spring.datasource.username", server::user);
    registry.add("spring.datasource.password", server::password);
  }

  /** The same as property lines, for an application built by hand. */
  public static String[] properties(String database) {
    PostgresServer server = PostgresServer.get();
    return new String[] {
      "spring.datasource.url=" + server.jdbcUrl(database),
      "spring.datasource.username=" + server.user(),
      "spring.datasource.password=" + server.password()
    };
  }
}
