package org.messagepump.spring.boot;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Map;

/**
 * The Spring Boot types these tests use whose package differs between Boot 4 and Boot 3, looked up
 * in whichever Boot is on the class path: one test source runs on both
 * (pump-spring-boot3-autoconfigure compiles and runs it against Boot 3.5).
 */
final class Boots {

  private Boots() {}

  /** Boot's DataSource auto-configuration. */
  static Class<?> dataSourceAutoConfiguration() {
    return first(
        "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration");
  }

  /** Boot's Flyway auto-configuration. */
  static Class<?> flywayAutoConfiguration() {
    return first(
        "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
        "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration");
  }

  /** The status code ({@code UP}, {@code DOWN}...) of one pump's indicator in the contributor. */
  static String healthStatus(Object messagepumpHealthContributor, String pump) {
    Object status = call(health(messagepumpHealthContributor, pump), "Health", "getStatus");
    return (String) call(status, "Status", "getCode");
  }

  /** The details of one pump's health. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> healthDetails(Object messagepumpHealthContributor, String pump) {
    return (Map<String, Object>)
        call(health(messagepumpHealthContributor, pump), "Health", "getDetails");
  }

  private static Object health(Object composite, String pump) {
    Object indicator = call(composite, "CompositeHealthContributor", "getContributor", pump);
    return call(indicator, "HealthIndicator", "health");
  }

  /** Calls a method of one of Boot's public health types (Boot 4's package, else Boot 3's). */
  private static Object call(Object target, String type, String method, Object... args) {
    Class<?> c =
        first(
            "org.springframework.boot.health.contributor." + type,
            "org.springframework.boot.actuate.health." + type);
    Class<?>[] parameters = new Class<?>[args.length];
    for (int i = 0; i < args.length; i++) {
      parameters[i] = args[i].getClass();
    }
    try {
      Method m = c.getMethod(method, parameters);
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw new IllegalStateException(type + "." + method, e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(type + "." + method, e);
    }
  }

  private static Class<?> first(String boot4, String boot3) {
    ClassLoader loader = Boots.class.getClassLoader();
    try {
      return Class.forName(boot4, false, loader);
    } catch (ClassNotFoundException e) {
      try {
        return Class.forName(boot3, false, loader);
      } catch (ClassNotFoundException e3) {
        throw new IllegalStateException("neither " + boot4 + " nor " + boot3, e3);
      }
    }
  }
}
