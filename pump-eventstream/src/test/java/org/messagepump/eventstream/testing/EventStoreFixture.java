package org.messagepump.eventstream.testing;

import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;
import org.messagepump.core.MessageCodec;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.eventstream.EventDriver;
import org.messagepump.eventstream.EventOperations;
import org.messagepump.eventstream.EventStore;
import org.messagepump.testkit.FreshTables;
import org.messagepump.testkit.TablesFixture;

/**
 * The fixture of the event-stream driver's tests and of the chaos suite: the {@code eventstream}
 * tables migrated once per test class and emptied before each test (the test kit's {@link
 * FreshTables}), a store on them and a pump under test with quick polling. Register it in a static
 * field of a class that carries {@code @ExtendWith(PostgresExtension.class)}:
 *
 * <pre>{@code
 * @RegisterExtension static final EventStoreFixture EVENTS = EventStoreFixture.of(CODEC);
 *
 * private final EventStore store = EVENTS.store();
 * }</pre>
 *
 * <p>It reaches the chaos suite through this module's test-jar, which holds this package only. It
 * is internal to the project's tests, not API: an application's tests use {@link FreshTables} with
 * {@link EventOperations#migrate()}, or a {@link TablesFixture} of their own (docs/testing.md).
 */
public final class EventStoreFixture extends TablesFixture<EventStoreFixture> {

  private final MessageCodec codec;

  private EventStoreFixture(FreshTables tables, MessageCodec codec) {
    super(tables);
    this.codec = codec;
  }

  /** Fresh {@code eventstream} tables, and stores that encode with {@code codec}. */
  public static EventStoreFixture of(MessageCodec codec) {
    return new EventStoreFixture(
        FreshTables.schema("eventstream", (ds, schema) -> EventOperations.of(ds, schema).migrate()),
        Objects.requireNonNull(codec, "codec"));
  }

  /** A store on the class's database with this fixture's codec. */
  public EventStore store() {
    return EventStore.create(dataSource(), codec);
  }

  /**
   * A pump under test over {@code driver} on {@code dataSource}: named by the driver's handler key,
   * polling every 50 ms and backing off 10 to 50 ms, so that a test waits for handling, not for the
   * pump; the test sets workers, batch size and failures as it needs.
   */
  public static MessagePump.Builder pump(DataSource dataSource, EventDriver driver) {
    return MessagePump.builder(dataSource)
        .name(driver.handlerKey())
        .driver(driver)
        .pollInterval(Duration.ofMillis(50))
        .backoff(Duration.ofMillis(10), Duration.ofMillis(50));
  }

  @Override
  protected EventStoreFixture with(FreshTables tables) {
    return new EventStoreFixture(tables, codec);
  }
}
