package org.messagepump.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.GenericContainer;

/**
 * The container the test kit starts when a Docker daemon answers, checked without starting it (the
 * build machine may have no Docker, and reading the image name would pull it): only Testcontainers'
 * core is used, with the settings of the test kit's other servers.
 */
class PostgresContainerTest {

  @Test
  void theContainerIsPostgresOnItsPortWithTheTestSettings() {
    GenericContainer<?> container = PostgresServer.container();
    assertThat(container.getExposedPorts()).isEqualTo(List.of(PostgresServer.POSTGRES_PORT));
    assertThat(container.getEnvMap()).containsKeys("POSTGRES_USER", "POSTGRES_PASSWORD");
    assertThat(container.getCommandParts())
        .containsExactly("postgres", "-c", "max_connections=400", "-c", "fsync=off");
  }
}
