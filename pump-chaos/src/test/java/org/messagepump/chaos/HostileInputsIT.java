package org.messagepump.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.balancer.BalancerOperations;
import org.messagepump.balancer.MessageBalancer;
import org.messagepump.chaos.kit.ChaosReport;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.EnqueueOptions;
import org.messagepump.commands.NewCommand;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.Tx;
import org.messagepump.eventstream.EventMetadata;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.StatementCapture;
import org.messagepump.testkit.TestDatabase;

/**
 * Scenario 10, case 8: bad input to the write APIs (NUL in header names and values, keys, ids and
 * type names; a key of 1,000 CJK characters; a delay of {@code Long.MAX_VALUE} seconds; {@code
 * Instant.MAX}; a null header value; a 20 MB payload; properties PostgreSQL's jsonb refuses), each
 * inside a caller's transaction: refused with an IllegalArgumentException or NullPointerException
 * before any SQL is sent, nothing stored, and the caller's transaction goes on (it inserts and
 * commits something else afterwards).
 */
@Tag("chaos")
@Tag("chaos-fast")
@ExtendWith(PostgresExtension.class)
class HostileInputsIT {

  static final String NUL = "a\u0000b";
  static final String CJK_1000 = "鍵".repeat(1_000);
  static final byte[] TWENTY_MB = new byte[20 << 20];

  /** A call of a write API inside the caller's transaction on {@code c}. */
  interface Call {
    void run(Connection c) throws Exception;
  }

  record Input(String name, Call call) {}

  @BeforeAll
  static void schemas(TestDatabase db) {
    CommandOperations.of(db.dataSource()).migrate();
    EventOperations.of(db.dataSource()).migrate();
    BalancerOperations.of(db.dataSource()).migrate();
    db.execute(Hostile.SCHEMA);
    Arrays.fill(TWENTY_MB, (byte) '7');
  }

  @Test
  void commandsRefuseBadInput(TestDatabase db) {
    CommandQueue q = CommandQueue.create(db.dataSource(), Work.CODEC);
    Work w = new Work(1);
    Map<String, String> nullValue = new HashMap<>();
    nullValue.put("h", null);
    List<Input> inputs =
        List.of(
            new Input(
                "header value with NUL",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withHeader("h", NUL))),
            new Input(
                "header name with NUL",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withHeader(NUL, "v"))),
            new Input(
                "idempotency key with NUL",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withIdempotencyKey(NUL))),
            new Input(
                "correlation id with NUL",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withCorrelationId(NUL))),
            new Input(
                "causation id with NUL",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withCausationId(NUL))),
            new Input(
                "type name with NUL",
                c ->
                    q.enqueueRaw(
                        c, "chaos.\u0000Work", Work.CODEC.encode(w), EnqueueOptions.defaults())),
            new Input(
                "idempotency key of 1,000 CJK characters",
                c ->
                    q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withIdempotencyKey(CJK_1000))),
            new Input(
                "correlation id of 1,000 CJK characters",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withCorrelationId(CJK_1000))),
            new Input(
                "delay of Long.MAX_VALUE seconds",
                c ->
                    q.enqueue(
                        Tx.of(c),
                        w,
                        EnqueueOptions.defaults().withDelay(Duration.ofSeconds(Long.MAX_VALUE)))),
            new Input(
                "deliverAt Instant.MAX",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withDeliverAt(Instant.MAX))),
            new Input(
                "null header value",
                c -> q.enqueue(Tx.of(c), w, EnqueueOptions.defaults().withHeaders(nullValue))),
            new Input(
                "20 MB payload",
                c -> q.enqueueRaw(c, Work.TYPE, TWENTY_MB, EnqueueOptions.defaults())),
            new Input(
                "enqueueAll: one good, one with a NUL header value",
                c ->
                    q.enqueueAll(
                        Tx.of(c),
                        List.of(
                            NewCommand.of(w),
                            NewCommand.of(w, EnqueueOptions.defaults().withHeader("h", NUL))))));
    check(
        db,
        "commands",
        inputs,
        "SELECT (SELECT count(*) FROM commandqueue.commands)"
            + " + (SELECT count(*) FROM commandqueue.idempotency_keys)");
  }

  @Test
  void eventsRefuseBadInput(TestDatabase db) {
    DataSource ds = db.dataSource();
    EventStore store = EventStore.create(ds, Work.CODEC);
    List<Work> one = List.of(new Work(1));
    Map<String, String> nullValue = new HashMap<>();
    nullValue.put("h", null);
    List<Input> inputs =
        List.of(
            new Input(
                "header value with NUL",
                c -> store.append(Tx.of(c), one, new EventMetadata(null, null, Map.of("h", NUL)))),
            new Input(
                "header name with NUL",
                c -> store.append(Tx.of(c), one, new EventMetadata(null, null, Map.of(NUL, "v")))),
            new Input(
                "correlation id with NUL",
                c -> store.append(Tx.of(c), one, EventMetadata.of(NUL, null))),
            new Input(
                "causation id with NUL",
                c -> store.append(Tx.of(c), one, EventMetadata.of(null, NUL))),
            new Input(
                "correlation id of 1,000 CJK characters",
                c -> store.append(Tx.of(c), one, EventMetadata.of(CJK_1000, null))),
            new Input(
                "null header value",
                c -> store.append(Tx.of(c), one, new EventMetadata(null, null, nullValue))),
            new Input(
                "type name with NUL",
                c -> EventStore.create(ds, codec("chaos.\u0000Work", false)).append(Tx.of(c), one)),
            new Input(
                "type name of 1,000 CJK characters",
                c -> EventStore.create(ds, codec(CJK_1000, false)).append(Tx.of(c), one)),
            new Input(
                "20 MB payload",
                c -> EventStore.create(ds, codec(Work.TYPE, true)).append(Tx.of(c), one)));
    check(db, "events", inputs, "SELECT count(*) FROM eventstream.events");
  }

  @Test
  void balancerRefusesBadInput(TestDatabase db) {
    DataSource ds = db.dataSource();
    MessageBalancer b = MessageBalancer.create(ds, "inputs");
    byte[] content = Work.CODEC.encode(new Work(1));
    List<Input> inputs =
        List.of(
            new Input("partition key with NUL", c -> b.storeMessage(c, NUL, content, null)),
            new Input(
                "partition key of 1,000 CJK characters",
                c -> b.storeMessage(c, CJK_1000, content, null)),
            new Input(
                "group name with NUL",
                c -> MessageBalancer.create(ds, NUL).storeMessage(c, "k", content, null)),
            new Input(
                "properties with an escaped NUL (\\u0000, refused by jsonb)",
                c -> b.storeMessage(c, "k", content, "{\"a\":\"\\u0000\"}")),
            new Input(
                "properties with a NUL character in a string",
                c -> b.storeMessage(c, "k", content, "{\"a\":\"x\u0000y\"}")),
            new Input(
                "properties with a NUL in a name",
                c -> b.storeMessage(c, "k", content, "{\"\\u0000\":1}")),
            new Input(
                "properties of 100 KB",
                c -> b.storeMessage(c, "k", content, "{\"a\":\"" + "x".repeat(100_000) + "\"}")),
            new Input("20 MB content", c -> b.storeMessage(c, "k", TWENTY_MB, null)),
            new Input("null content", c -> b.storeMessage(c, "k", null, null)));
    check(db, "balancer", inputs, "SELECT count(*) FROM balancer.messages");
  }

  /** A codec for {@link Work} under {@code type}, encoding 20 MB when {@code huge}. */
  private static MessageCodec codec(String type, boolean huge) {
    return new MessageCodec() {
      @Override
      public String typeOf(Class<?> messageClass) {
        return type;
      }

      @Override
      public Class<?> classOf(String t) {
        return Work.class;
      }

      @Override
      public byte[] encode(Object message) {
        return huge ? TWENTY_MB : Work.CODEC.encode(message);
      }

      @Override
      public Object decode(String t, byte[] payload) {
        return Work.CODEC.decode(Work.TYPE, payload);
      }
    };
  }

  /**
   * Runs each input inside a caller's transaction that wrote a row before it and writes another
   * after it, then commits; collects every way an input was not refused cleanly.
   */
  private static void check(TestDatabase db, String driver, List<Input> inputs, String storedSql) {
    List<String> failures = new ArrayList<>();
    int refused = 0;
    int refusedBeforeSending = 0;
    int callerSurvived = 0;
    for (Input input : inputs) {
      StatementCapture capture = StatementCapture.of(db.dataSource());
      Throwable thrown = null;
      List<String> sent = List.of();
      String tag = driver + ": " + input.name();
      try (Connection c = capture.dataSource().getConnection()) {
        c.setAutoCommit(false);
        try {
          callerWrites(c, "before " + tag);
          capture.clear();
          try {
            input.call().run(c);
          } catch (Throwable t) {
            thrown = t;
          }
          sent = capture.statements();
          callerWrites(c, "after " + tag);
          c.commit();
        } catch (Exception e) {
          c.rollback();
          failures.add(
              input.name() + ": the caller's transaction did not survive (" + oneLine(e) + ")");
        }
      } catch (Exception e) {
        failures.add(input.name() + ": " + oneLine(e));
      }
      if (thrown instanceof IllegalArgumentException || thrown instanceof NullPointerException) {
        refused++;
      } else {
        failures.add(
            input.name() + ": " + (thrown == null ? "accepted" : "refused by " + oneLine(thrown)));
      }
      if (sent.isEmpty()) {
        refusedBeforeSending++;
      } else {
        failures.add(input.name() + ": sent " + sent.size() + " statement(s) first");
      }
      long callerRows =
          db.queryLong(
              "SELECT count(*) FROM hostile.caller WHERE what IN ('before "
                  + tag.replace("'", "''")
                  + "', 'after "
                  + tag.replace("'", "''")
                  + "')");
      if (callerRows == 2) {
        callerSurvived++;
      }
      long stored = db.queryLong(storedSql);
      if (stored != 0) {
        failures.add(input.name() + ": " + stored + " row(s) stored");
        db.execute(
            driver.equals("commands")
                ? "TRUNCATE commandqueue.commands, commandqueue.idempotency_keys"
                : driver.equals("events")
                    ? "TRUNCATE eventstream.handler_checkpoints, eventstream.stream_types,"
                        + " eventstream.events, eventstream.streams"
                    : "TRUNCATE balancer.messages, balancer.partitions");
      }
    }
    long idleInTx =
        db.queryLong(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                + " AND state LIKE 'idle in transaction%'");
    ChaosReport.of("10-hostile-" + driver + "-bad-input")
        .put("inputs", inputs.size())
        .put("refused", refused)
        .put("refusedBeforeSending", refusedBeforeSending)
        .put("callerTransactionSurvived", callerSurvived)
        .put("idleInTransaction", idleInTx)
        .put("failures", String.join("; ", failures))
        .write();
    assertThat(failures).as("bad inputs not refused cleanly").isEmpty();
    assertThat(idleInTx).as("transactions left open").isZero();
  }

  private static void callerWrites(Connection c, String what) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO hostile.caller VALUES (?)")) {
      ps.setString(1, what.replace('\u0000', '0'));
      ps.executeUpdate();
    }
  }

  private static String oneLine(Throwable t) {
    String m = t.getClass().getSimpleName() + ": " + t.getMessage();
    m = m.replace('\u0000', '0').replaceAll("\\s+", " ");
    return m.length() > 200 ? m.substring(0, 200) + "..." : m;
  }
}
