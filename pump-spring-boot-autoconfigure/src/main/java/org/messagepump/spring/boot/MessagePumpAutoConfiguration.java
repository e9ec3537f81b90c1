package org.messagepump.spring.boot;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.CommandRetention;
import org.messagepump.commands.CommandScheduler;
import org.messagepump.console.ConsoleConfig;
import org.messagepump.console.ConsoleServlet;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.EventStore;
import org.messagepump.spring.boot.internal.CommandJobs;
import org.messagepump.spring.boot.internal.DeliveryBinding;
import org.messagepump.spring.boot.internal.DeliveryEntityManagers;
import org.messagepump.spring.boot.internal.LibraryMigrations;
import org.messagepump.spring.boot.internal.MessagePumps;
import org.messagepump.spring.boot.internal.MicrometerPumpMeterRegistry;
import org.messagepump.spring.boot.internal.MigratedSchemas;
import org.messagepump.spring.boot.internal.ObservationPumpObservations;
import org.messagepump.spring.boot.internal.PumpHealthContributor;
import org.messagepump.spring.boot.internal.PumpMeterRegistry;
import org.messagepump.spring.boot.internal.PumpObservations;
import org.messagepump.spring.boot.internal.SpringBinding;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanNotOfRequiredTypeException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Auto-configuration of messagepump: startup migrations, the command queue, event store and
 * balancer beans (with {@code Transactional*} producers that join the caller's Spring transaction),
 * one {@link MessagePump} per {@link PumpDefinition} bean configured from {@code
 * messagepump.pumps.<name>.*} over {@code messagepump.defaults.*} and then by the {@link
 * MessagePumpCustomizer} beans, started and stopped with the context, the {@link
 * MessagePumpRegistry} of their handles, Micrometer and an Actuator health contributor. See
 * docs/spring-boot.md.
 *
 * <p>The same class serves Spring Boot 4 and 3: it uses only the API both share, and names the
 * auto-configurations it follows in both's packages. Only the health contributor differs: Boot 4's
 * is declared here (off without Boot 4's health classes), Boot 3's by
 * pump-spring-boot3-autoconfigure.
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
      "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
      "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
      "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
      "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
      // The same auto-configurations' names on Spring Boot 3 (pump-spring-boot3-autoconfigure).
      "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
      "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
      "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration",
      "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration"
    })
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(MessagePumpProperties.class)
public class MessagePumpAutoConfiguration {

  private static final Logger log = LoggerFactory.getLogger(MessagePumpAutoConfiguration.class);

  /** The bean name of Spring Boot's FlywayMigrationInitializer (the application's migrations). */
  static final String FLYWAY_INITIALIZER = "flywayInitializer";

  /**
   * Runs the startup migrations the {@code messagepump.migrate} property asks for, after checking
   * the modules' schema properties (every bean that uses the tables depends on this one).
   */
  @Bean
  MigratedSchemas messagePumpMigrations(
      DataSource dataSource,
      MessagePumpProperties properties,
      ObjectProvider<org.flywaydb.core.Flyway> flyway,
      BeanFactory beans) {
    LibraryMigrations.Schemas schemas =
        new LibraryMigrations.Schemas(
            properties.getCommands().getSchema(),
            properties.getEvents().getSchema(),
            properties.getBalancer().getSchema());
    switch (properties.getMigrate()) {
      case LIBRARY:
        return new MigratedSchemas(LibraryMigrations.library(dataSource, schemas));
      case FLYWAY:
        if (beans.containsBean(FLYWAY_INITIALIZER)) {
          beans.getBean(FLYWAY_INITIALIZER); // the application's own migrations first
        }
        org.flywaydb.core.Flyway app = flyway.getIfUnique();
        if (app == null) {
          throw new IllegalStateException(
              "messagepump.migrate=flyway needs the application's Flyway bean"
                  + " (spring-boot-starter-flyway, spring.flyway.enabled=true)");
        }
        return new MigratedSchemas(LibraryMigrations.flyway(app.getConfiguration(), schemas));
      default:
        return new MigratedSchemas(List.of());
    }
  }

  /**
   * The public {@link MessagePumpRegistry}: a handle per pump of {@link #messagePumps} (none with
   * {@code messagepump.enabled=false}).
   */
  @Bean
  MessagePumpRegistry messagePumpRegistry(MessagePumps pumps) {
    return new PumpRegistry(pumps);
  }

  /**
   * The pumps of the {@link PumpDefinition} beans, started and stopped with the context (none with
   * {@code messagepump.enabled=false}).
   */
  @Bean
  MessagePumps messagePumps(
      ObjectProvider<PumpDefinition> definitions,
      DataSource dataSource,
      MessagePumpProperties properties,
      ObjectProvider<PumpMeterRegistry> meterRegistry,
      ObjectProvider<MessagePumpCustomizer> customizers,
      BeanFactory beans,
      MigratedSchemas migrated,
      ObjectProvider<DeliveryBinding> alsoBound,
      ObjectProvider<PumpObservations> observations) {
    if (!properties.isEnabled()) {
      log.info("messagepump.enabled=false: no pumps are created");
      return new MessagePumps(List.of(), name -> null, properties.isAutoStartup());
    }
    List<PumpDefinition> defs = definitions.orderedStream().toList();
    Set<String> names = new LinkedHashSet<>();
    for (PumpDefinition d : defs) {
      if (!names.add(d.pumpName())) {
        throw new IllegalStateException(
            "two PumpDefinition beans name the pump '" + d.pumpName() + "'");
      }
    }
    for (String configured : properties.getPumps().keySet()) {
      if (!names.contains(configured)) {
        throw new IllegalStateException(
            "messagepump.pumps."
                + configured
                + " configures a pump no PumpDefinition bean declares; declared: "
                + names);
      }
    }
    PumpMeterRegistry registry = meterRegistry.getIfUnique();
    DeliveryBinding entityManagers = alsoBound.getIfUnique();
    PumpObservations observed = observations.getIfUnique();
    Map<String, DataSource> listenSources = new HashMap<>();
    for (String name : names) {
      // Fail at startup, naming the option, rather than when the context starts the pumps.
      MessagePumpProperties.Pump options = properties.options(name);
      named("messagepump.pumps." + name + " (or messagepump.defaults)", options::toOptions);
      String listenBean = options.getNotificationsDataSource();
      if (listenBean != null) {
        listenSources.put(name, notificationsDataSource(beans, name, listenBean));
      }
    }
    return new MessagePumps(
        new ArrayList<>(names),
        name -> {
          PumpDefinition d =
              defs.stream().filter(x -> x.pumpName().equals(name)).findFirst().orElseThrow();
          MessagePump.Builder b =
              MessagePump.builder(dataSource)
                  .name(name)
                  .driver(d.driver(beans))
                  .options(properties.options(name).toOptions());
          if (observed != null) {
            b.interceptor(observed.interceptor(name)); // outermost: sees the binding's outcome
          }
          b.interceptor(new SpringBinding(dataSource, name, entityManagers));
          DataSource listen = listenSources.get(name);
          if (listen != null) {
            b.notificationsDataSource(listen);
          }
          if (registry != null) {
            registry.applyTo(b);
          }
          customizers.orderedStream().forEach(c -> c.customize(name, b));
          return b.build();
        },
        properties.isAutoStartup());
  }

  private static DataSource notificationsDataSource(BeanFactory beans, String pump, String bean) {
    String property =
        "messagepump.pumps."
            + pump
            + ".notifications-data-source (or messagepump.defaults.notifications-data-source)";
    if (!beans.containsBean(bean)) {
      throw new IllegalStateException(
          property + " names no bean: '" + bean + "' (it takes a DataSource bean's name)");
    }
    try {
      return beans.getBean(bean, DataSource.class);
    } catch (BeanNotOfRequiredTypeException e) {
      throw new IllegalStateException(
          property + " names the bean '" + bean + "', which is not a DataSource", e);
    }
  }

  /** Runs {@code build}, naming {@code property} in the message of a value it refuses. */
  static <T> T named(String property, java.util.function.Supplier<T> build) {
    try {
      return build.get();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(property + ": " + e.getMessage(), e);
    }
  }

  /**
   * JPA inside handlers: the Hibernate EntityManagerFactories on the pump's DataSource get an
   * EntityManager on the delivery's connection, bound for each handler's duration (see
   * docs/spring-boot.md). Without JPA, Hibernate or spring-orm on the class path, nothing.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(
      name = {
        "jakarta.persistence.EntityManagerFactory",
        "org.hibernate.SessionFactory",
        "org.springframework.orm.jpa.EntityManagerHolder"
      })
  static class JpaConfiguration {
    @Bean
    @ConditionalOnMissingBean
    DeliveryEntityManagers messagePumpEntityManagers(
        ObjectProvider<jakarta.persistence.EntityManagerFactory> factories, DataSource dataSource) {
      return DeliveryEntityManagers.of(factories.orderedStream().toList(), dataSource);
    }
  }

  /** The class of pump-jackson3's codec, on the class path with the Spring Boot 4 starter. */
  static final String JACKSON3_CODEC = "org.messagepump.jackson3.Jackson3MessageCodec";

  /**
   * The JSON codec of the application's {@link MessageTypes} bean on Jackson 2, when pump-jackson3
   * is not on the class path (the Spring Boot 3 starter).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBean(MessageTypes.class)
  @ConditionalOnMissingClass(JACKSON3_CODEC)
  static class CodecConfiguration {
    @Bean
    @ConditionalOnMissingBean
    MessageCodec messagePumpCodec(MessageTypes types) {
      return JsonMessageCodec.of(types);
    }
  }

  /**
   * The JSON codec of the application's {@link MessageTypes} bean on Jackson 3, when pump-jackson3
   * is on the class path (the Spring Boot 4 starter brings it). Both codecs write the same JSON.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBean(MessageTypes.class)
  @ConditionalOnClass(name = {JACKSON3_CODEC, "tools.jackson.databind.ObjectMapper"})
  static class Jackson3CodecConfiguration {
    @Bean
    @ConditionalOnMissingBean
    MessageCodec messagePumpCodec(MessageTypes types) {
      return org.messagepump.jackson3.Jackson3MessageCodec.of(types);
    }
  }

  /** The command queue, its operator and its transactional producer. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(CommandQueue.class)
  @ConditionalOnBean(MessageTypes.class)
  static class CommandsConfiguration {
    @Bean
    @ConditionalOnMissingBean
    CommandQueue commandQueue(
        DataSource dataSource,
        MessageCodec codec,
        MessagePumpProperties properties,
        ObjectProvider<PumpMeterRegistry> meterRegistry,
        ObjectProvider<PumpObservations> observations,
        MigratedSchemas migrated) {
      String schema = properties.getCommands().getSchema();
      CommandQueue.Builder b =
          CommandQueue.builder(dataSource)
              .codec(codec)
              .schema(schema)
              .history(properties.getCommands().isHistory());
      meterRegistry.ifUnique(m -> m.applyTo(b));
      observations.ifUnique(o -> b.producerHook(o.producerHook()));
      return b.build();
    }

    /**
     * The operator face of the command queue bean's schema (dead letters, paused types, pending
     * commands, schedules, history), sharing the queue's meters.
     */
    @Bean
    @ConditionalOnMissingBean
    org.messagepump.commands.CommandOperations commandOperations(CommandQueue queue) {
      return queue.operations();
    }

    /**
     * The scheduler (when enabled, or unset and the application defines {@link
     * org.messagepump.commands.Schedule} beans, which it stores at start-up) and the retention job
     * (when enabled).
     */
    @Bean
    @ConditionalOnMissingBean
    CommandJobs messagePumpCommandJobs(
        CommandQueue queue,
        MessagePumpProperties properties,
        ObjectProvider<org.messagepump.commands.Schedule> scheduleBeans) {
      MessagePumpProperties.Scheduler sp = properties.getCommands().getScheduler();
      MessagePumpProperties.Retention rp = properties.getCommands().getRetention();
      List<org.messagepump.commands.Schedule> schedules = scheduleBeans.orderedStream().toList();
      boolean runScheduler = sp.getEnabled() != null ? sp.getEnabled() : !schedules.isEmpty();
      java.util.function.Supplier<CommandScheduler> scheduler =
          !runScheduler
              ? null
              : () ->
                  option(
                      "messagepump.commands.scheduler",
                      () ->
                          CommandScheduler.builder(queue)
                              .pollInterval(sp.getPollInterval())
                              .maxIdle(sp.getMaxIdle())
                              .build());
      java.util.function.Supplier<CommandRetention> retention =
          !rp.isEnabled()
              ? null
              : () ->
                  option(
                      "messagepump.commands.retention",
                      () -> {
                        CommandRetention.Builder r =
                            CommandRetention.builder(queue.operations())
                                .batchSize(rp.getBatchSize())
                                .interval(rp.getInterval())
                                .batchPause(rp.getBatchPause());
                        if (rp.getDeadLetterAge() != null) {
                          r.deadLetterAge(rp.getDeadLetterAge());
                        }
                        if (rp.getHistoryAge() != null) {
                          r.historyAge(rp.getHistoryAge());
                        }
                        return r.build();
                      });
      return new CommandJobs(queue, schedules, scheduler, retention);
    }

    /** Builds with {@code build}, naming the property prefix in a refusal of a bad option. */
    private static <T> T option(String prefix, java.util.function.Supplier<T> build) {
      try {
        return build.get();
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(prefix + ": " + e.getMessage(), e);
      }
    }

    @Bean
    @ConditionalOnMissingBean
    TransactionalCommandQueue transactionalCommandQueue(CommandQueue queue, DataSource dataSource) {
      return new TransactionalCommandQueue(queue, dataSource);
    }
  }

  /** The event store and its transactional producer. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(EventStore.class)
  @ConditionalOnBean(MessageTypes.class)
  static class EventsConfiguration {
    @Bean
    @ConditionalOnMissingBean
    EventStore eventStore(
        DataSource dataSource,
        MessageCodec codec,
        MessagePumpProperties properties,
        ObjectProvider<PumpMeterRegistry> meterRegistry,
        ObjectProvider<PumpObservations> observations,
        MigratedSchemas migrated) {
      String schema = properties.getEvents().getSchema();
      EventStore.Builder b = EventStore.builder(dataSource, codec).schema(schema);
      meterRegistry.ifUnique(m -> m.applyTo(b));
      observations.ifUnique(o -> b.producerHook(o.producerHook()));
      return b.build();
    }

    @Bean
    @ConditionalOnMissingBean
    TransactionalEventStore transactionalEventStore(EventStore store, DataSource dataSource) {
      return new TransactionalEventStore(store, dataSource);
    }
  }

  /** The partition groups' transactional producer (one balancer per group, made on first use). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MessageBalancer.class)
  static class BalancerConfiguration {
    @Bean
    @ConditionalOnMissingBean
    TransactionalBalancer transactionalBalancer(
        DataSource dataSource,
        MessagePumpProperties properties,
        ObjectProvider<PumpMeterRegistry> meterRegistry,
        ObjectProvider<PumpObservations> observations,
        MigratedSchemas migrated) {
      PumpMeterRegistry registry = meterRegistry.getIfUnique();
      PumpObservations observed = observations.getIfUnique();
      String schema = properties.getBalancer().getSchema();
      return new TransactionalBalancer(
          dataSource,
          group -> {
            MessageBalancer.Builder b = MessageBalancer.builder(dataSource, group).schema(schema);
            if (registry != null) {
              registry.applyTo(b);
            }
            if (observed != null) {
              b.producerHook(observed.producerHook());
            }
            return b.build();
          });
    }
  }

  /**
   * The application's {@code MeterRegistry} for the pumps, the drivers and the console, when
   * micrometer-core is on the class path (Spring Boot's Actuator brings it). Without it, or without
   * a registry bean, no meters are recorded. See docs/observability.md.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
  static class MetersConfiguration {
    @Bean
    @ConditionalOnMissingBean
    PumpMeterRegistry messagePumpMeterRegistry(
        ObjectProvider<io.micrometer.core.instrument.MeterRegistry> registries) {
      return new MicrometerPumpMeterRegistry(registries);
    }
  }

  /**
   * Tracing through Micrometer's Observation API, when the application has an {@code
   * ObservationRegistry} (Spring Boot's, with Actuator) and {@code messagepump.tracing.enabled} is
   * not false: every enqueue, append and store is a producer observation whose context the messages
   * carry, and every delivery a consumer observation of it. Boot's tracing bridge (OpenTelemetry or
   * Brave) turns them into spans of one trace. See docs/observability.md.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.observation.ObservationRegistry")
  @ConditionalOnBean(type = "io.micrometer.observation.ObservationRegistry")
  @ConditionalOnBooleanProperty(name = "messagepump.tracing.enabled", matchIfMissing = true)
  static class ObservationConfiguration {
    @Bean
    @ConditionalOnMissingBean
    PumpObservations messagePumpObservations(
        ObjectProvider<io.micrometer.observation.ObservationRegistry> registry) {
      return new ObservationPumpObservations(registry.getObject());
    }
  }

  /** One Actuator health indicator per pump, under {@code messagepump}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  @ConditionalOnBooleanProperty(name = "messagepump.enabled", matchIfMissing = true)
  static class HealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "messagepumpHealthContributor")
    CompositeHealthContributor messagepumpHealthContributor(MessagePumps pumps) {
      return PumpHealthContributor.of(pumps);
    }
  }

  /**
   * The operations console's servlet under {@code messagepump.console.path}, when enabled and
   * pump-console is on the class path. The audit log names the request's user (Spring Security's
   * principal, through {@code getRemoteUser()}) or "console".
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(
      name = {
        "org.messagepump.console.ConsoleServlet",
        "org.springframework.boot.web.servlet.ServletRegistrationBean"
      })
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnProperty(prefix = "messagepump.console", name = "enabled", havingValue = "true")
  static class ConsoleConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "messagepumpConsole")
    ServletRegistrationBean<ConsoleServlet> messagepumpConsole(
        DataSource dataSource,
        MessagePumpProperties properties,
        ObjectProvider<PumpMeterRegistry> meterRegistry) {
      MessagePumpProperties.Console c = properties.getConsole();
      String mapping = c.servletMapping();
      ConsoleConfig.Builder config =
          ConsoleConfig.builder()
              .schemas(
                  properties.getCommands().getSchema(),
                  properties.getEvents().getSchema(),
                  properties.getBalancer().getSchema())
              .readOnly(c.isReadOnly())
              .showPayloads(c.isShowPayloads())
              .accessToken(c.getAccessToken())
              .remoteWithoutToken(c.isRemoteWithoutToken());
      meterRegistry.ifUnique(m -> m.applyTo(config));
      ServletRegistrationBean<ConsoleServlet> registration =
          new ServletRegistrationBean<>(new ConsoleServlet(dataSource, config.build()), mapping);
      registration.setName("messagepumpConsole");
      return registration;
    }
  }
}
