package org.messagepump.commands;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.time.Duration;

/**
 * A scheduler in a JVM of its own, for {@link SchedulerKillIT}: {@code jdbcUrl user password
 * applicationName}. Runs until its standard input closes, or until it is killed.
 */
public final class SchedulerNodeMain {

  private SchedulerNodeMain() {}

  public static void main(String[] args) throws IOException {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(args[0]);
    config.setUsername(args[1]);
    config.setPassword(args[2]);
    config.setMaximumPoolSize(2);
    config.addDataSourceProperty("ApplicationName", args[3]);
    try (HikariDataSource ds = new HikariDataSource(config);
        CommandScheduler scheduler =
            CommandScheduler.builder(CommandQueue.create(ds, Fixtures.CODEC))
                .name(args[3])
                .pollInterval(Duration.ofMillis(50))
                .maxIdle(Duration.ofMillis(200))
                .build()) {
      scheduler.start();
      while (System.in.read() >= 0) {
        // until the end of input
      }
    }
  }
}
