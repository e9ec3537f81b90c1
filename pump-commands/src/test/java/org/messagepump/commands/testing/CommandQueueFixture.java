package org.messagepump.commands.testing;

import java.util.Objects;
import org.messagepump.commands.CommandOperations;
import org.messagepump.commands.CommandQueue;
import org.messagepump.core.MessageCodec;
import org.messagepump.testkit.FreshTables;
import org.messagepump.testkit.TablesFixture;

/**
 * The fixture of the command queue's tests and of the chaos suite: the {@code commandqueue} tables
 * migrated once per test class and emptied before each test (the test kit's {@link FreshTables}),
 * and a queue on them. Register it in a static field of a class that carries
 * {@code @ExtendWith(PostgresExtension.class)}:
 *
 * <pre>{@code
 * @RegisterExtension static final CommandQueueFixture COMMANDS = CommandQueueFixture.of(CODEC);
 *
 * private final CommandQueue queue = COMMANDS.queue();
 * }</pre>
 *
 * <p>It reaches the chaos suite through this module's test-jar, which holds this package only. It
 * is internal to the project's tests, not API: an application's tests use {@link FreshTables} with
 * {@link org.messagepump.commands.CommandOperations#migrate()}, or a {@link TablesFixture} of their
 * own (docs/testing.md).
 */
public final class CommandQueueFixture extends TablesFixture<CommandQueueFixture> {

  private final MessageCodec codec;

  private CommandQueueFixture(FreshTables tables, MessageCodec codec) {
    super(tables);
    this.codec = codec;
  }

  /** Fresh {@code commandqueue} tables, and queues that encode with {@code codec}. */
  public static CommandQueueFixture of(MessageCodec codec) {
    return new CommandQueueFixture(
        FreshTables.schema("commandqueue", (ds, s) -> CommandOperations.of(ds, s).migrate()),
        Objects.requireNonNull(codec, "codec"));
  }

  /** A queue on the class's database with this fixture's codec. */
  public CommandQueue queue() {
    return CommandQueue.create(dataSource(), codec);
  }

  @Override
  protected CommandQueueFixture with(FreshTables tables) {
    return new CommandQueueFixture(tables, codec);
  }
}
