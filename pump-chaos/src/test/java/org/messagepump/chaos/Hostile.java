package org.messagepump.chaos;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.Driver;
import org.messagepump.core.spi.ForwardingDriver;

/** Shared pieces of scenario 10 (hostile handlers and payloads). */
final class Hostile {

  /** The number of the hostile {@link Work} message. */
  static final long HOSTILE_N = -1;

  /** Broken JSON whose parser error quotes a NUL byte. */
  static final byte[] UNDECODABLE_NUL = "{\"n\": \"\u0000".getBytes(StandardCharsets.UTF_8);

  /** The tables the hostile handlers write to. */
  static final String SCHEMA =
      "CREATE SCHEMA IF NOT EXISTS hostile;"
          + "CREATE TABLE IF NOT EXISTS hostile.effects (what text NOT NULL);"
          + "CREATE TABLE IF NOT EXISTS hostile.once (k int,"
          + " CONSTRAINT once_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED);"
          + "CREATE TABLE IF NOT EXISTS hostile.caller (what text NOT NULL)";

  private Hostile() {}

  /** The cases of hostile deliveries (1 to 7 of the scenario). */
  enum Case {
    /** 1: the handler throws an exception whose message holds a NUL byte. */
    NUL_REASON("nul-reason"),
    /** 2: the payload cannot be decoded and the decode error quotes a NUL byte. */
    UNDECODABLE_NUL("undecodable-nul"),
    /** 3: an SQLException 08006 from another connection than the pump's. */
    OTHER_CONNECTION_08006("other-connection-08006"),
    /** 4a: a StackOverflowError by recursion. */
    STACK_OVERFLOW("stack-overflow"),
    /** 4b: an AssertionError. */
    ASSERTION_ERROR("assertion-error"),
    /** 5a: the handler writes, then commits the pump's connection. */
    COMMIT("commit"),
    /** 5b: the handler writes, then closes the pump's connection. */
    CLOSE("close"),
    /** 6: the handler's write breaks a deferred constraint: the commit fails. */
    DEFERRED_CONSTRAINT("deferred-constraint"),
    /** 7: the stored row's headers column is valid JSON of the wrong shape. */
    BAD_HEADERS("bad-headers");

    final String label;

    Case(String label) {
      this.label = label;
    }

    /** What the hostile handler does in this case (returns normally where it is never reached). */
    void act(Tx tx) throws Exception {
      switch (this) {
        case NUL_REASON:
          throw new IllegalStateException("hostile\u0000reason");
        case OTHER_CONNECTION_08006:
          throw new SQLException("reporting database is down", "08006");
        case STACK_OVERFLOW:
          recurse(0);
          return;
        case ASSERTION_ERROR:
          throw new AssertionError("hostile assertion");
        case COMMIT:
          effect(tx, "commit");
          tx.connection().commit();
          return;
        case CLOSE:
          effect(tx, "close");
          try (java.sql.Connection c = tx.connection()) {
            // closing the pump's connection behind its back
          }
          return;
        case DEFERRED_CONSTRAINT:
          effect(tx, "deferred");
          try (var s = tx.connection().createStatement()) {
            s.execute("INSERT INTO hostile.once VALUES (1)");
          }
          return;
        default:
          // UNDECODABLE_NUL, BAD_HEADERS: the driver must fail before the handler runs.
          effect(tx, "reached");
      }
    }
  }

  private static void effect(Tx tx, String what) throws SQLException {
    try (var ps = tx.connection().prepareStatement("INSERT INTO hostile.effects VALUES (?)")) {
      ps.setString(1, what);
      ps.executeUpdate();
    }
  }

  private static int recurse(int depth) {
    return recurse(depth + 1) + 1;
  }

  /** A pump configuration. */
  record Config(int workers, int batchSize) {
    String label() {
      return workers + "w-b" + batchSize;
    }
  }

  /** A driver that forwards to another and counts how often the hostile message is acquired. */
  static final class CountingDriver extends ForwardingDriver {
    private volatile String hostileId;
    final AtomicInteger acquisitions = new AtomicInteger();

    CountingDriver(Driver d) {
      super(d);
    }

    void hostileId(String id) {
      this.hostileId = id;
    }

    @Override
    public List<Delivery> acquire(Tx tx, int max) throws SQLException {
      List<Delivery> got = super.acquire(tx, max);
      String h = hostileId;
      for (Delivery x : got) {
        if (x.messageId().equals(h)) {
          acquisitions.incrementAndGet();
        }
      }
      return got;
    }

    @Override
    public java.util.Optional<Delivery> reacquire(Tx tx, Delivery delivery) throws SQLException {
      java.util.Optional<Delivery> got = super.reacquire(tx, delivery);
      got.filter(x -> x.messageId().equals(hostileId))
          .ifPresent(x -> acquisitions.incrementAndGet());
      return got;
    }
  }

  /**
   * Counts the lines written to {@code System.err} (where slf4j-simple logs, looked up at each
   * write) while installed, passing them on: all of them, and those of the {@code org.messagepump}
   * loggers (a line {@code [thread] LEVEL org.messagepump... - ...} and the stack-trace lines after
   * it), so the embedded server's own log (forwarded to slf4j as well) is told apart.
   */
  static final class ErrLines implements AutoCloseable {
    private final PrintStream original = System.err;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();
    private int lines;
    private int pumpLines;
    private int warnOrError;
    private int commitFailures;
    private boolean inPump;

    ErrLines() {
      OutputStream counting =
          new OutputStream() {
            @Override
            public void write(int b) {
              synchronized (ErrLines.this) {
                original.write(b);
                if (b == '\n') {
                  String l = line.toString(StandardCharsets.UTF_8);
                  line.reset();
                  lines++;
                  if (l.startsWith("[")) {
                    inPump = l.matches("\\[[^\\]]*\\] [A-Z]+ org\\.messagepump\\..*");
                    if (inPump && (l.contains("] WARN ") || l.contains("] ERROR "))) {
                      warnOrError++;
                    }
                    if (inPump && l.contains(": commit failed; ")) {
                      commitFailures++;
                    }
                  }
                  if (inPump) {
                    pumpLines++;
                  }
                } else if (line.size() < 4096) {
                  line.write(b);
                }
              }
            }

            @Override
            public void write(byte[] b, int off, int len) {
              for (int i = off; i < off + len; i++) {
                write(b[i]);
              }
            }
          };
      System.setErr(new PrintStream(counting, true, StandardCharsets.UTF_8));
    }

    synchronized int lines() {
      return lines;
    }

    /** Lines of the {@code org.messagepump} loggers, stack traces included. */
    synchronized int pumpLines() {
      return pumpLines;
    }

    /** WARN and ERROR lines of the {@code org.messagepump} loggers. */
    synchronized int warnOrError() {
      return warnOrError;
    }

    /** The pump's lines saying that a batch's commit failed (one per failed commit). */
    synchronized int commitFailures() {
      return commitFailures;
    }

    @Override
    public void close() {
      System.err.flush();
      System.setErr(original);
    }
  }
}
