package org.messagepump.jackson3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.Limits;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.core.UnknownMessageTypeException;
import org.messagepump.core.spi.Inputs;
import tools.jackson.databind.json.JsonMapper;

class Jackson3MessageCodecTest {

  record PlaceOrder(String orderId, int quantity, Instant at) {}

  record CancelOrder(String orderId) {}

  record Basket(String owner, List<PlaceOrder> lines) {}

  /** A message whose accessor fails: Jackson cannot write it. */
  public static final class Unwritable {
    public String getValue() {
      throw new IllegalStateException("no value");
    }
  }

  private static final MessageTypes TYPES =
      MessageTypes.builder()
          .register(PlaceOrder.class, "orders.PlaceOrder")
          .register(CancelOrder.class)
          .register(Basket.class)
          .register(Unwritable.class)
          .build();

  private final Jackson3MessageCodec codec = Jackson3MessageCodec.of(TYPES);

  @Test
  void roundTripsRegisteredRecords() {
    PlaceOrder order = new PlaceOrder("o-1", 3, Instant.parse("2026-01-02T03:04:05Z"));
    byte[] bytes = codec.encode(order);
    assertThat(new String(bytes, StandardCharsets.UTF_8)).contains("\"2026-01-02T03:04:05Z\"");
    assertThat(codec.typeOf(PlaceOrder.class)).isEqualTo("orders.PlaceOrder");
    assertThat(codec.classOf("orders.PlaceOrder")).isEqualTo(PlaceOrder.class);
    assertThat(codec.decode("orders.PlaceOrder", bytes)).isEqualTo(order);
    assertThat(codec.typeOf(CancelOrder.class)).isEqualTo("CancelOrder");
    assertThat(codec.types()).isSameAs(TYPES);
  }

  @Test
  void readsAndWritesWhatTheJackson2CodecDoes() {
    // An application moving from one Jackson to the other keeps its stored messages readable.
    JsonMessageCodec jackson2 = JsonMessageCodec.of(TYPES);
    Basket basket =
        new Basket(
            "ada",
            List.of(
                new PlaceOrder("o-1", 3, Instant.parse("2026-01-02T03:04:05.123456Z")),
                new PlaceOrder("o-2", 0, Instant.parse("2026-01-02T03:04:05Z"))));
    assertThat(codec.decode("Basket", jackson2.encode(basket))).isEqualTo(basket);
    assertThat(jackson2.decode("Basket", codec.encode(basket))).isEqualTo(basket);
    assertThat(new String(codec.encode(basket), StandardCharsets.UTF_8))
        .isEqualTo(new String(jackson2.encode(basket), StandardCharsets.UTF_8));
  }

  @Test
  void unknownTypesAreNamed() {
    assertThatThrownBy(() -> codec.decode("orders.Nope", new byte[] {'{', '}'}))
        .isInstanceOf(UnknownMessageTypeException.class)
        .hasMessageContaining("orders.Nope");
    assertThatThrownBy(() -> codec.classOf("orders.Nope"))
        .isInstanceOf(UnknownMessageTypeException.class);
    assertThatThrownBy(() -> codec.encode("a string"))
        .isInstanceOf(UnknownMessageTypeException.class)
        .hasMessageContaining("java.lang.String");
  }

  @Test
  void badPayloadsAreUndecodableWithTheTypeInTheMessage() {
    for (String bad :
        new String[] {
          "{not json",
          "null",
          "{\"orderId\":\"x\",\"bogus\":1}",
          "[]",
          "",
          "{\"orderId\":\"x\",\"quantity\":null}",
          "{\"orderId\":\"x\"} {}",
          "{\"orderId\":\"x\",\"at\":\"not a time\"}"
        }) {
      assertThatThrownBy(
              () -> codec.decode("orders.PlaceOrder", bad.getBytes(StandardCharsets.UTF_8)))
          .as(bad)
          .isInstanceOf(UndecodableMessageException.class)
          .hasMessageContaining("orders.PlaceOrder");
    }
    assertThatThrownBy(() -> codec.decode("orders.PlaceOrder", null))
        .isInstanceOf(UndecodableMessageException.class)
        .hasMessageContaining("missing");
  }

  @Test
  void anUnencodableMessageIsAnIllegalArgument() {
    assertThatThrownBy(() -> codec.encode(new Unwritable()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Unwritable.class.getName());
    assertThatThrownBy(() -> codec.encode(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void aNulCharacterIsEscapedAndAnOversizedPayloadIsRefusedBeforeSending() {
    // Payloads are stored as bytes: NUL travels escaped and comes back intact.
    CancelOrder nul = new CancelOrder("a\u0000b");
    byte[] bytes = codec.encode(nul);
    assertThat(new String(bytes, StandardCharsets.UTF_8)).contains("\\u0000");
    assertThat(codec.decode("CancelOrder", bytes)).isEqualTo(nul);
    // The drivers check the encoded size against their limits, whichever codec encoded it.
    Limits small = new Limits(64, 8, 1024, 1024);
    byte[] large = codec.encode(new CancelOrder("x".repeat(100)));
    assertThatThrownBy(() -> Inputs.payload("payload", large, small))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limit of 64");
  }

  @Test
  void usesTheCallersMapper() {
    Jackson3MessageCodec lenient = Jackson3MessageCodec.of(TYPES, JsonMapper.builder().build());
    assertThat(
            lenient.decode(
                "CancelOrder", "{\"orderId\":\"x\",\"extra\":1}".getBytes(StandardCharsets.UTF_8)))
        .isEqualTo(new CancelOrder("x"));
    assertThatThrownBy(() -> Jackson3MessageCodec.of(TYPES, null))
        .isInstanceOf(NullPointerException.class);
  }
}
