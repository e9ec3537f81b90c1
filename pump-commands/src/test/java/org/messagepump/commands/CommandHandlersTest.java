package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.messagepump.commands.Fixtures.PlaceOrder;
import org.messagepump.commands.Fixtures.ShipOrder;
import org.messagepump.commands.Fixtures.Unregistered;
import org.postgresql.ds.PGSimpleDataSource;

class CommandHandlersTest {

  private static final CommandQueue QUEUE =
      CommandQueue.create(new PGSimpleDataSource(), Fixtures.CODEC); // never connects here

  @Test
  void duplicatesAreRejectedAtBuild() {
    CommandHandlers.Builder b =
        CommandHandlers.builder()
            .on(PlaceOrder.class, (c, ctx) -> {})
            .on(PlaceOrder.class, (c, ctx) -> {});
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("duplicate command handler for class " + PlaceOrder.class.getName());
    CommandHandlers.Builder raw =
        CommandHandlers.builder().onRaw("x.Y", (c, ctx) -> {}).onRaw("x.Y", (c, ctx) -> {});
    assertThatThrownBy(raw::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("type 'x.Y'");
    assertThatThrownBy(() -> CommandHandlers.builder().build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no command handlers");
  }

  @Test
  void nullsAndBlankNamesAreRejected() {
    assertThatThrownBy(() -> CommandHandlers.builder().on(null, (c, ctx) -> {}))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> CommandHandlers.builder().on(PlaceOrder.class, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(PlaceOrder.class.getName());
    assertThatThrownBy(() -> CommandHandlers.builder().onRaw(" ", (c, ctx) -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("type must not be blank");
  }

  @Test
  void theDriverAcquiresExactlyTheHandlersTypes() {
    CommandDriver driver =
        QUEUE.driver(
            CommandHandlers.builder()
                .on(PlaceOrder.class, (c, ctx) -> {})
                .onRaw("external.Ping", (bytes, ctx) -> {})
                .on(ShipOrder.class, (c, ctx) -> {})
                .build());
    assertThat(driver.types())
        .containsExactly("orders.PlaceOrder", "external.Ping", "orders.ShipOrder");
    assertThat(driver.name()).isEqualTo("commands");
  }

  @Test
  void theDriverRejectsUnregisteredClassesAndTypesHandledTwice() {
    assertThatThrownBy(
            () ->
                QUEUE.driver(
                    CommandHandlers.builder().on(Unregistered.class, (c, ctx) -> {}).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Unregistered.class.getName())
        .hasMessageContaining("not registered");
    assertThatThrownBy(
            () ->
                QUEUE.driver(
                    CommandHandlers.builder()
                        .on(PlaceOrder.class, (c, ctx) -> {})
                        .onRaw("orders.PlaceOrder", (c, ctx) -> {})
                        .build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'orders.PlaceOrder' has two handlers");
  }

  @Test
  void queueOptionsAreValidatedByName() {
    PGSimpleDataSource ds = new PGSimpleDataSource();
    assertThatThrownBy(() -> CommandQueue.builder(ds).maxPayloadBytes(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxPayloadBytes");
    assertThatThrownBy(() -> CommandQueue.builder(ds).codec(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("codec");
    assertThatThrownBy(() -> CommandQueue.builder(ds).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("codec is required");
    assertThat(CommandQueue.builder(ds).codec(Fixtures.CODEC).build().maxPayloadBytes())
        .isEqualTo(CommandQueue.DEFAULT_MAX_PAYLOAD_BYTES);
  }

  @Test
  void newCommandsValidateTheirParts() {
    assertThatThrownBy(() -> NewCommand.of(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("command must not be null");
    assertThatThrownBy(() -> NewCommand.raw("t", null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("payload");
    assertThatThrownBy(() -> NewCommand.raw("t".repeat(201), new byte[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most 200");
    assertThat(NewCommand.raw("t", new byte[] {1})).isEqualTo(NewCommand.raw("t", new byte[] {1}));
    assertThatThrownBy(() -> QUEUE.enqueueAll(List.of(NewCommand.of(new Unregistered("x")))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not registered");
  }
}
