package org.messagepump.spring.boot;

import java.util.regex.Pattern;
import org.messagepump.core.spi.Driver;
import org.springframework.beans.factory.BeanFactory;

/**
 * A pump declared as a bean: its name (the key of {@code messagepump.pumps.<name>.*}) and the
 * handlers it runs. Declare one of {@link CommandPump}, {@link EventPump} or {@link BalancedPump}
 * as a {@code @Bean}; the auto-configuration builds, starts and stops a {@code MessagePump} for
 * each, and runs every handler with the delivery's transaction bound to Spring (JdbcTemplate and
 * {@code @Transactional} code join it).
 */
public abstract class PumpDefinition {

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  private final String pumpName;

  PumpDefinition(String pumpName) {
    if (pumpName == null || !NAME.matcher(pumpName).matches()) {
      throw new IllegalArgumentException(
          "pump name must be 1-64 letters, digits, '_', '.' or '-': " + pumpName);
    }
    this.pumpName = pumpName;
  }

  /** The pump's name: thread names, log lines, metric tags and its properties' key. */
  public String pumpName() {
    return pumpName;
  }

  /** The driver of this pump, built from the application's beans (queue, store, data source). */
  abstract Driver driver(BeanFactory beans);
}
