package org.messagepump.commands;

import org.messagepump.conformance.DriverConformance;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.core.spi.Driver;
import org.messagepump.testkit.TestDatabase;

/** The driver conformance kit against the command queue's driver: parks, no order. */
class CommandDriverConformanceIT extends DriverConformance {

  record Item(String key) {}

  private static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(MessageTypes.builder().register(Item.class, "conformance.Item").build());

  private CommandQueue queue;

  @Override
  protected void prepare(TestDatabase db) {
    CommandOperations.of(db.dataSource()).migrate();
    db.execute("TRUNCATE commandqueue.commands, commandqueue.dead_letters");
    queue = CommandQueue.create(db.dataSource(), CODEC);
  }

  @Override
  protected Driver driver(TestDatabase db, Behaviour behaviour) {
    // (command, context) whatever their order: find the context among the two arguments.
    return queue.driver(
        CommandHandlers.builder()
            .on(
                Item.class,
                (a, b) -> {
                  CommandContext ctx = context(a, b);
                  behaviour.run(String.valueOf(ctx.messageId()), ctx.attempt());
                })
            .build());
  }

  private static CommandContext context(Object a, Object b) {
    return (CommandContext) (a instanceof CommandContext ? a : b);
  }

  @Override
  protected String produce(TestDatabase db, String key) {
    return queue.enqueue(new Item(key)).messageId().toString();
  }

  @Override
  protected long remaining(TestDatabase db) {
    return db.queryLong("SELECT count(*) FROM commandqueue.commands");
  }

  @Override
  protected long parked(TestDatabase db) {
    return db.queryLong("SELECT count(*) FROM commandqueue.dead_letters");
  }

  @Override
  protected boolean parks() {
    return true;
  }

  @Override
  protected boolean orderedPerKey() {
    return false;
  }
}
