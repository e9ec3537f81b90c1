package org.messagepump.eventstream;

import java.sql.Connection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.messagepump.conformance.DriverConformance;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.Tx;
import org.messagepump.core.spi.Driver;
import org.messagepump.testkit.TestDatabase;

/**
 * The driver conformance kit against the event stream driver: a key is a stream; it parks (a
 * stream, for this handler) and keeps each stream's order. Each test gets a fresh schema.
 */
class EventDriverConformanceIT extends DriverConformance {

  record Item(String key) {}

  private static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(MessageTypes.builder().register(Item.class, "conformance.Item").build());
  private static final String HANDLER = "conformance";
  private static final AtomicInteger SCHEMAS = new AtomicInteger();

  private EventStore store;
  private final Map<String, Long> streams = new HashMap<>();

  @Override
  protected void prepare(TestDatabase db) {
    String schema = "conformance_events_" + SCHEMAS.incrementAndGet();
    EventOperations.of(db.dataSource(), schema).migrate();
    store = EventStore.builder(db.dataSource(), CODEC).schema(schema).build();
    streams.clear();
  }

  @Override
  protected Driver driver(TestDatabase db, Behaviour behaviour) {
    // (event, context) whatever their order: find the context among the two arguments.
    return store.driver(
        HANDLER,
        EventHandlers.builder()
            .on(
                Item.class,
                (a, b) -> {
                  EventContext ctx = context(a, b);
                  behaviour.run(ctx.messageId(), ctx.attempt());
                })
            .build());
  }

  private static EventContext context(Object a, Object b) {
    return (EventContext) (a instanceof EventContext ? a : b);
  }

  @Override
  protected String produce(TestDatabase db, String key) throws Exception {
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      Tx tx = Tx.of(c);
      Long stream = streams.get(key);
      List<Item> events = List.of(new Item(key));
      AppendResult r =
          stream == null ? store.append(tx, events) : store.appendTo(tx, stream, events);
      c.commit();
      streams.put(key, r.streamId());
      return r.messageIds().get(0);
    }
  }

  @Override
  protected long remaining(TestDatabase db) {
    return store.operations().lag(HANDLER) - parked(db);
  }

  @Override
  protected long parked(TestDatabase db) {
    return store.operations().parked(HANDLER).stream().mapToLong(Checkpoint::lag).sum();
  }

  @Override
  protected boolean parks() {
    return true;
  }

  @Override
  protected boolean orderedPerKey() {
    return true;
  }
}
