package org.messagepump.spring.boot.jpa;

import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.core.MessageTypes;
import org.messagepump.spring.boot.CommandPump;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/**
 * The JPA test application: Boot's Hibernate auto-configuration (so the transaction manager is a
 * JpaTransactionManager), a Spring Data JPA repository, and a command pump whose handler writes
 * through it.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
class LedgerApp {

  /** How the handler writes the entry. */
  enum Via {
    /** {@code repository.save} in the handler. */
    REPOSITORY,
    /** {@code saveAndFlush}, another pending {@code save}, then the first attempt throws. */
    REPOSITORY_THEN_THROW,
    /** A {@code @Transactional(MANDATORY)} service's {@code saveAndFlush}. */
    MANDATORY_SERVICE,
    /** {@code save}, {@code flush}, a JdbcTemplate read of it and a JdbcTemplate write. */
    WITH_JDBC_TEMPLATE,
    /** As above; the first attempt throws after both writes. */
    WITH_JDBC_TEMPLATE_THEN_THROW,
    /**
     * The first attempt calls a REQUIRED service method that saves, flushes and throws, catches
     * that and returns normally; then saves its own entry.
     */
    SWALLOWED_FAILURE,
    /** {@code save}, {@code flush}, a native query and a count, noting backends and borrows. */
    CONNECTIONS
  }

  /** A command: post an entry. */
  record Post(String id, int amount, Via via) {}

  /** What the handlers saw, for the tests, by entry id. */
  static final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

  static final Map<String, Long> visibleOutsideDuringHandler = new ConcurrentHashMap<>();
  static final Map<String, Long> seenByJdbcTemplate = new ConcurrentHashMap<>();
  static final Map<String, Object> observed = new ConcurrentHashMap<>();

  @Bean
  MessageTypes messageTypes() {
    return MessageTypes.builder().register(Post.class, "test.Post").build();
  }

  @Bean
  LedgerService ledgerService(EntryRepository entries) {
    return new LedgerService(entries);
  }

  @Bean
  CommandPump ledger(
      EntryRepository entries, LedgerService service, JdbcTemplate jdbc, DataSource dataSource) {
    return CommandPump.of(
        "ledger",
        CommandHandlers.builder()
            .on(
                Post.class,
                (post, ctx) -> {
                  int attempt =
                      attempts
                          .computeIfAbsent(post.id(), k -> new AtomicInteger())
                          .incrementAndGet();
                  Entry entry = new Entry(post.id(), post.amount(), attempt);
                  switch (post.via()) {
                    case REPOSITORY -> entries.save(entry);
                    case REPOSITORY_THEN_THROW -> {
                      entries.saveAndFlush(entry);
                      seenByJdbcTemplate.put(post.id(), countEntries(jdbc, post.id()));
                      entries.save(new Entry(post.id() + "-pending", 1, attempt));
                      if (attempt == 1) {
                        throw new IllegalStateException("first attempt of " + post.id());
                      }
                    }
                    case MANDATORY_SERVICE -> service.post(entry);
                    case SWALLOWED_FAILURE -> {
                      if (attempt == 1) {
                        try {
                          service.postThenFail(new Entry(post.id() + "-inner", 1, attempt));
                        } catch (IllegalStateException swallowed) {
                          // The handler goes on as if nothing happened: the delivery must fail.
                        }
                      }
                      entries.save(entry);
                    }
                    case WITH_JDBC_TEMPLATE, WITH_JDBC_TEMPLATE_THEN_THROW -> {
                      entries.save(entry);
                      entries.flush();
                      seenByJdbcTemplate.put(post.id(), countEntries(jdbc, post.id()));
                      jdbc.update(
                          "INSERT INTO audit (entry_id, attempt) VALUES (?, ?)",
                          post.id(),
                          attempt);
                      if (post.via() == Via.WITH_JDBC_TEMPLATE_THEN_THROW && attempt == 1) {
                        throw new IllegalStateException("first attempt of " + post.id());
                      }
                    }
                    case CONNECTIONS -> {
                      int borrowedBefore = BorrowCounting.byThisThread();
                      observed.put("jdbcPid", backendPid(jdbc));
                      entries.save(entry);
                      entries.flush();
                      observed.put("jpaPid", service.backendPid());
                      observed.put("entries", entries.count());
                      observed.put("borrowed", BorrowCounting.byThisThread() - borrowedBefore);
                    }
                  }
                  visibleOutsideDuringHandler.put(post.id(), countOutside(dataSource, post.id()));
                })
            .build());
  }

  static long countEntries(JdbcTemplate jdbc, String id) {
    return jdbc.queryForObject("SELECT count(*) FROM entries WHERE id = ?", Long.class, id);
  }

  static int backendPid(JdbcTemplate jdbc) {
    return jdbc.queryForObject("SELECT pg_backend_pid()", Integer.class);
  }

  /**
   * Counts the entry's rows on a connection of its own, outside the delivery's transaction (taken
   * from the pool directly: a JdbcTemplate would be given the delivery's).
   */
  static long countOutside(DataSource dataSource, String id) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM entries WHERE id = ?")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Counts, per thread, the connections taken from the application's DataSource. */
  @Bean
  static BeanPostProcessor borrowCounting() {
    return new BeanPostProcessor() {
      @Override
      public Object postProcessAfterInitialization(Object bean, String name) {
        return bean instanceof DataSource ds && name.equals("dataSource")
            ? new BorrowCounting(ds)
            : bean;
      }
    };
  }

  /** The application's DataSource, counting the connections each thread takes from it. */
  static final class BorrowCounting extends DelegatingDataSource {
    private static final ThreadLocal<int[]> borrowed = ThreadLocal.withInitial(() -> new int[1]);

    BorrowCounting(DataSource target) {
      super(target);
    }

    static int byThisThread() {
      return borrowed.get()[0];
    }

    @Override
    public Connection getConnection() throws SQLException {
      borrowed.get()[0]++;
      return super.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      borrowed.get()[0]++;
      return super.getConnection(user, password);
    }
  }

  /** A service written the usual Spring way: JPA inside @Transactional methods. */
  static class LedgerService {
    private final EntryRepository entries;

    @PersistenceContext private EntityManager entityManager;

    LedgerService(EntryRepository entries) {
      this.entries = entries;
    }

    /** MANDATORY: throws unless a transaction (the delivery's) is there to join. */
    @Transactional(propagation = Propagation.MANDATORY)
    public void post(Entry entry) {
      entries.saveAndFlush(entry);
    }

    /** REQUIRED: joins the delivery's transaction, writes, then fails. */
    @Transactional
    public void postThenFail(Entry entry) {
      entries.saveAndFlush(entry);
      throw new IllegalStateException("inner method fails after writing " + entry.getId());
    }

    /** The backend of the shared EntityManager's connection (a native query). */
    @Transactional(propagation = Propagation.MANDATORY)
    public int backendPid() {
      return ((Number) entityManager.createNativeQuery("SELECT pg_backend_pid()").getSingleResult())
          .intValue();
    }
  }
}
