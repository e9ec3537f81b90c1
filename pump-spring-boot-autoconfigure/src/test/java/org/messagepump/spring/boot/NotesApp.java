package org.messagepump.spring.boot;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.messagepump.commands.CommandHandlers;
import org.messagepump.core.MessageTypes;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/**
 * The test application: a command pump whose handler writes through a @Transactional service. JDBC
 * only, so that the transaction manager is Boot's DataSourceTransactionManager (JPA is on the test
 * class path for {@code jpa.JpaRepositoriesIT}, whose entities live below this package).
 */
@SpringBootConfiguration
@EnableAutoConfiguration(
    excludeName = {
      "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
      "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration",
      // The same on Spring Boot 3.
      "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
      "org.springframework.boot.autoconfigure.data.jpa.JpaRepositoriesAutoConfiguration"
    })
class NotesApp {

  /** A command: write a note; {@code failFirst} makes the first attempt throw after writing. */
  record Note(String id, boolean failFirst, long sleepMillis) {}

  /** What the handlers saw, for the tests. */
  static final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

  static final Map<String, Long> visibleOutsideDuringHandler = new ConcurrentHashMap<>();

  @Bean
  MessageTypes messageTypes() {
    return MessageTypes.builder().register(Note.class, "test.Note").build();
  }

  @Bean
  NoteService noteService(JdbcTemplate jdbc, TransactionalCommandQueue commands) {
    return new NoteService(jdbc, commands);
  }

  @Bean
  CommandPump notes(NoteService service, DataSource dataSource) {
    return CommandPump.of(
        "notes",
        CommandHandlers.builder()
            .on(
                Note.class,
                (note, ctx) -> {
                  int attempt =
                      attempts
                          .computeIfAbsent(note.id(), k -> new AtomicInteger())
                          .incrementAndGet();
                  if (note.id().startsWith("swallow-") && attempt == 1) {
                    try {
                      service.writeThenFail(note.id() + "-inner");
                    } catch (IllegalStateException swallowed) {
                      // The handler goes on as if nothing happened: the delivery must still fail.
                    }
                  }
                  service.write(note.id(), attempt);
                  visibleOutsideDuringHandler.put(note.id(), countOutside(dataSource, note.id()));
                  if (note.sleepMillis() > 0) {
                    Thread.sleep(note.sleepMillis());
                  }
                  if (note.failFirst() && attempt == 1) {
                    throw new IllegalStateException("first attempt of " + note.id() + " fails");
                  }
                })
            .build());
  }

  /** Counts the note's rows on a connection of its own, outside the delivery's transaction. */
  static long countOutside(DataSource dataSource, String id) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM notes WHERE id = ?")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Plain Spring data access: JdbcTemplate inside @Transactional methods. */
  static class NoteService {
    private final JdbcTemplate jdbc;
    private final TransactionalCommandQueue commands;

    NoteService(JdbcTemplate jdbc, TransactionalCommandQueue commands) {
      this.jdbc = jdbc;
      this.commands = commands;
    }

    /** MANDATORY: throws unless a transaction (the delivery's) is there to join. */
    @Transactional(propagation = Propagation.MANDATORY)
    public void write(String id, int attempt) {
      jdbc.update("INSERT INTO notes (id, attempt) VALUES (?, ?)", id, attempt);
    }

    /** REQUIRED: joins the delivery's transaction, writes, then fails. */
    @Transactional
    public void writeThenFail(String id) {
      jdbc.update("INSERT INTO notes (id, attempt) VALUES (?, 0)", id);
      throw new IllegalStateException("inner method fails after writing " + id);
    }

    /** Writes an order row and enqueues a note in one transaction, then fails if asked to. */
    @Transactional
    public void enqueue(String id, boolean thenFail) {
      jdbc.update("INSERT INTO requests (id) VALUES (?)", id);
      commands.enqueue(new Note(id, false, 0));
      if (thenFail) {
        throw new IllegalStateException("the service fails after enqueueing " + id);
      }
    }
  }
}
