package org.messagepump.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.messagepump.core.spi.SqlStates;

class JsonMessageCodecTest {

  record PlaceOrder(String orderId, int quantity, Instant at) {}

  record CancelOrder(String orderId) {}

  private final JsonMessageCodec codec =
      JsonMessageCodec.of(
          MessageTypes.builder()
              .register(PlaceOrder.class, "orders.PlaceOrder")
              .register(CancelOrder.class)
              .build());

  @Test
  void roundTripsRegisteredRecords() {
    PlaceOrder order = new PlaceOrder("o-1", 3, Instant.parse("2026-01-02T03:04:05Z"));
    byte[] bytes = codec.encode(order);
    assertThat(new String(bytes, StandardCharsets.UTF_8)).contains("\"2026-01-02T03:04:05Z\"");
    assertThat(codec.typeOf(PlaceOrder.class)).isEqualTo("orders.PlaceOrder");
    assertThat(codec.decode("orders.PlaceOrder", bytes)).isEqualTo(order);
    assertThat(codec.typeOf(CancelOrder.class)).isEqualTo("CancelOrder");
  }

  @Test
  void unknownTypesAreNamed() {
    assertThatThrownBy(() -> codec.decode("orders.Nope", new byte[] {'{', '}'}))
        .isInstanceOf(UnknownMessageTypeException.class)
        .hasMessageContaining("orders.Nope");
    assertThatThrownBy(() -> codec.encode("a string"))
        .isInstanceOf(UnknownMessageTypeException.class)
        .hasMessageContaining("java.lang.String");
  }

  @Test
  void badPayloadsAreUndecodableWithTheTypeInTheMessage() {
    for (String bad :
        new String[] {"{not json", "null", "{\"orderId\":\"x\",\"bogus\":1}", "[]", ""}) {
      assertThatThrownBy(
              () -> codec.decode("orders.PlaceOrder", bad.getBytes(StandardCharsets.UTF_8)))
          .as(bad)
          .isInstanceOf(UndecodableMessageException.class)
          .hasMessageContaining("orders.PlaceOrder");
    }
  }

  @Test
  void registryRejectsDuplicatesAndBadNames() {
    assertThatThrownBy(
            () ->
                MessageTypes.builder()
                    .register(PlaceOrder.class, "a")
                    .register(PlaceOrder.class, "b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("already registered");
    assertThatThrownBy(
            () ->
                MessageTypes.builder()
                    .register(PlaceOrder.class, "a")
                    .register(CancelOrder.class, "a"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'a'");
    assertThatThrownBy(() -> MessageTypes.builder().register(PlaceOrder.class, "has space"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> MessageTypes.builder().register(PlaceOrder.class, " "))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void sqlStatesAreClassifiedOnce() {
    assertThat(SqlStates.classify(new SQLException("x", "40001")))
        .isEqualTo(SqlStates.Kind.TRANSIENT);
    assertThat(SqlStates.classify(new SQLException("x", "40P01")))
        .isEqualTo(SqlStates.Kind.TRANSIENT);
    assertThat(SqlStates.classify(new SQLException("x", "55P03")))
        .isEqualTo(SqlStates.Kind.TRANSIENT);
    assertThat(SqlStates.classify(new SQLException("x", "08006")))
        .isEqualTo(SqlStates.Kind.CONNECTION);
    assertThat(SqlStates.classify(new SQLException("x", "57P01")))
        .isEqualTo(SqlStates.Kind.CONNECTION);
    assertThat(SqlStates.classify(new SQLException("x", "23505")))
        .isEqualTo(SqlStates.Kind.PERMANENT);
    assertThat(SqlStates.classify(new SQLTransientConnectionException("pool timeout")))
        .isEqualTo(SqlStates.Kind.CONNECTION);
    assertThat(SqlStates.classify(new RuntimeException(new SQLException("x", "40001"))))
        .isEqualTo(SqlStates.Kind.TRANSIENT);
    assertThat(SqlStates.classify(new IllegalStateException("no sql")))
        .isEqualTo(SqlStates.Kind.PERMANENT);
  }
}
