package org.messagepump.eventstream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.messagepump.eventstream.Fixtures.CODEC;
import static org.messagepump.eventstream.Fixtures.inTx;

import java.sql.ResultSet;
import java.sql.Statement;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.messagepump.core.Limits;
import org.messagepump.core.MessageCodec;
import org.messagepump.eventstream.Fixtures.Noise;
import org.messagepump.eventstream.Fixtures.OpenTx;
import org.messagepump.eventstream.Fixtures.OrderPlaced;
import org.messagepump.eventstream.testing.EventStoreFixture;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Every write API and option checks its input before anything is sent: a bad argument is an
 * IllegalArgumentException (NullPointerException for a required null) naming it, and the caller's
 * own transaction survives the rejection.
 */
@ExtendWith(PostgresExtension.class)
class EventInputsIT {

  private static final String LONG_KEY = "k".repeat(Limits.MAX_KEY_BYTES + 1);

  @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);

  private final EventStore store = EVENTS.store();

  /** A codec like {@link Fixtures#CODEC} that names {@link Noise} with {@code noiseType}. */
  private static MessageCodec codecNaming(String noiseType) {
    return new MessageCodec() {
      @Override
      public String typeOf(Class<?> messageClass) {
        return messageClass == Noise.class ? noiseType : CODEC.typeOf(messageClass);
      }

      @Override
      public Class<?> classOf(String type) {
        return type.equals(noiseType) ? Noise.class : CODEC.classOf(type);
      }

      @Override
      public byte[] encode(Object message) {
        return CODEC.encode(message);
      }

      @Override
      public Object decode(String type, byte[] payload) {
        return CODEC.decode(type.equals(noiseType) ? "test.Noise" : type, payload);
      }
    };
  }

  private static EventMetadata headers(Map<String, String> headers) {
    return new EventMetadata(null, null, headers);
  }

  @Test
  void badAppendsAreRejectedBeforeAnythingIsSentAndTheCallersTransactionSurvives(TestDatabase db)
      throws Exception {
    DataSource ds = db.dataSource();
    EventStore small =
        EventStore.builder(ds, CODEC)
            .limits(
                Limits.defaults().withMaxPayloadBytes(64).withMaxHeaders(2).withMaxHeaderBytes(32))
            .build();
    EventStore nulTyped = EventStore.create(ds, codecNaming("bad\0type"));
    EventStore longTyped = EventStore.create(ds, codecNaming(LONG_KEY));
    long stream = inTx(ds, tx -> store.createStream(tx));
    List<Object> one = List.of(new Noise(1));
    Map<String, String> three = new LinkedHashMap<>();
    three.put("a", "1");
    three.put("b", "2");
    three.put("c", "3");

    try (OpenTx t = new OpenTx(ds)) {
      store.append(t.tx, List.of(new Noise(0))); // the caller's own work before the rejections
      rejects(t, () -> store.append(null, one), NullPointerException.class, "tx");
      rejects(t, () -> store.append(t.tx, one, null), NullPointerException.class, "metadata");
      rejects(t, () -> store.append(t.tx, null), NullPointerException.class, "events");
      rejects(t, () -> store.append(t.tx, List.of()), IllegalArgumentException.class, "empty");
      rejects(
          t,
          () -> store.append(t.tx, one, EventMetadata.of("x\0y", null)),
          IllegalArgumentException.class,
          "correlationId must not contain a NUL");
      rejects(
          t,
          () -> store.append(t.tx, one, EventMetadata.of(LONG_KEY, null)),
          IllegalArgumentException.class,
          "correlationId is longer than 512");
      rejects(
          t,
          () -> store.appendTo(t.tx, stream, 0, one, EventMetadata.of(null, LONG_KEY)),
          IllegalArgumentException.class,
          "causationId is longer than 512");
      rejects(
          t,
          () -> store.append(t.tx, one, headers(Map.of("h", "a\0b"))),
          IllegalArgumentException.class,
          "header 'h' must not contain a NUL");
      rejects(
          t,
          () -> store.append(t.tx, one, headers(Map.of("h\0", "v"))),
          IllegalArgumentException.class,
          "header name must not contain a NUL");
      rejects(
          t,
          () -> small.append(t.tx, one, headers(three)),
          IllegalArgumentException.class,
          "3 entries, more than the limit of 2");
      rejects(
          t,
          () -> small.append(t.tx, one, headers(Map.of("h", "v".repeat(40)))),
          IllegalArgumentException.class,
          "32");
      rejects(
          t,
          () -> small.append(t.tx, List.of(new OrderPlaced("x".repeat(100), 1))),
          IllegalArgumentException.class,
          "payload of events[0] is");
      rejects(
          t,
          () -> nulTyped.append(t.tx, one),
          IllegalArgumentException.class,
          "type name of events[0] must not contain a NUL");
      rejects(
          t,
          () -> longTyped.appendTo(t.tx, stream, one),
          IllegalArgumentException.class,
          "type name of events[0] is longer than 512");
      rejects(
          t,
          () -> store.appendTo(t.tx, stream, -1, one),
          IllegalArgumentException.class,
          "expectedNextOffset");
      rejects(
          t,
          () -> store.appendTo(t.tx, 999_999, one),
          IllegalArgumentException.class,
          "does not exist");
      store.append(t.tx, List.of(new Noise(2)));
      t.commit();
    }
    assertThat(db.queryLong("SELECT count(*) FROM eventstream.events")).isEqualTo(2);
  }

  /** Asserts the call is rejected, then that the caller's transaction still runs a statement. */
  private static void rejects(
      OpenTx t, ThrowingCallable call, Class<? extends Throwable> type, String message)
      throws Exception {
    assertThatThrownBy(call).isInstanceOf(type).hasMessageContaining(message);
    try (Statement s = t.connection.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM eventstream.events")) {
      assertThat(rs.next()).isTrue();
    }
  }

  @Test
  void metadataRefusesNullHeadersWithAMessageNamingThem() {
    Map<String, String> nullValue = new HashMap<>();
    nullValue.put("tenant", null);
    assertThatThrownBy(() -> new EventMetadata(null, null, nullValue))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("header 'tenant' must not be null");
    Map<String, String> nullName = new HashMap<>();
    nullName.put(null, "v");
    assertThatThrownBy(() -> new EventMetadata(null, null, nullName))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("null name");
  }

  @Test
  void aHandlerForATypeNameNoEventCanHaveIsRefusedAtRegistration(DataSource ds) {
    EventStore nulTyped = EventStore.create(ds, codecNaming("bad\0type"));
    EventHandlers noise = EventHandlers.builder().on(Noise.class, (e, ctx) -> {}).build();
    assertThatThrownBy(() -> nulTyped.driver("k", noise))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type name of " + Noise.class.getName())
        .hasMessageContaining("NUL");
    EventStore longTyped = EventStore.create(ds, codecNaming(LONG_KEY));
    EventHandlers projected = EventHandlers.builder().project(Noise.class, (e, ctx) -> 0).build();
    assertThatThrownBy(() -> longTyped.driver("k", projected))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("longer than 512");
    assertThatThrownBy(() -> store.driver(null, noise))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerKey");
    assertThatThrownBy(() -> store.driver("a\0b", noise))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerKey");
    assertThatThrownBy(() -> EventHandlers.builder().on(null, (e, ctx) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("class");
    assertThatThrownBy(() -> EventHandlers.builder().onRaw("a\0b", (e, ctx) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> EventHandlers.builder().onRaw(" ", (e, ctx) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type");
  }

  @Test
  void checkpointOperationsCheckTheHandlerKey() {
    EventOperations h = store.operations();
    assertThatThrownBy(() -> h.reset(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("handlerKey");
    assertThatThrownBy(() -> h.resume("a\0b", 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerKey must not contain a NUL");
    assertThatThrownBy(() -> h.setCheckpoint(LONG_KEY, 1, 0, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerKey is longer than 512");
    assertThatThrownBy(() -> h.setCheckpoint("h", 1, 0, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("negative");
    assertThatThrownBy(() -> h.checkpoints(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handlerKey must not be empty");
  }

  @Test
  void schemaAndLimitsOptionsAndGrantArgumentsAreChecked(DataSource ds) {
    for (String bad : List.of("", "Upper", "1abc", "with-dash", "a\0b", "x".repeat(41))) {
      assertThatThrownBy(() -> EventStore.builder(ds, CODEC).schema(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
      assertThatThrownBy(() -> EventOperations.of(ds, bad).migrate())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
      assertThatThrownBy(() -> EventOperations.of(ds, bad).grantStatements("r"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("schema");
    }
    assertThatThrownBy(() -> EventStore.builder(ds, CODEC).schema(null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> EventStore.builder(ds, CODEC).limits(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("limits");
    assertThatThrownBy(() -> EventOperations.of(ds, "eventstream").grantStatements("r\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("role");
    assertThatThrownBy(() -> EventOperations.of(ds, "eventstream").grantStatements("r".repeat(64)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("role is longer than 63");
    assertThat(EventOperations.of(ds, "es_x").grantStatements("app\"role"))
        .containsExactly(
            "GRANT USAGE ON SCHEMA \"es_x\" TO \"app\"\"role\"",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE \"es_x\".\"streams\","
                + " \"es_x\".\"events\", \"es_x\".\"stream_types\","
                + " \"es_x\".\"handler_checkpoints\", \"es_x\".\"handlers\","
                + " \"es_x\".\"stream_keys\", \"es_x\".\"paused_handlers\" TO \"app\"\"role\"",
            "GRANT USAGE, SELECT ON SEQUENCE \"es_x\".\"streams_id_seq\","
                + " \"es_x\".\"checkpoint_turns\" TO \"app\"\"role\"");
    EventStore configured =
        EventStore.builder(ds, CODEC).schema("es_x").limits(Limits.defaults()).build();
    assertThat(configured.schema()).isEqualTo("es_x");
    assertThat(configured.wakeChannel()).isEqualTo("messagepump_events_es_x");
    assertThat(store.wakeChannel()).isEqualTo("messagepump_events_eventstream");
  }
}
