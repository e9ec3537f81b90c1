package org.messagepump.commands;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.messagepump.core.spi.Inputs;

/**
 * An immutable registry of command handlers, one per command class (typed handlers, decoded by the
 * queue's codec) or per type name (raw handlers, given the payload bytes). A {@link CommandDriver}
 * acquires exactly the types registered here.
 *
 * <pre>{@code
 * CommandHandlers handlers = CommandHandlers.builder()
 *     .on(PlaceOrder.class, (cmd, ctx) -> orders.place(ctx.tx(), cmd))
 *     .onRaw("audit.Record", (bytes, ctx) -> audit.write(ctx.tx(), bytes))
 *     .build();
 * }</pre>
 */
public final class CommandHandlers {

  /**
   * One registration: a typed handler ({@code commandClass} set) or a raw one ({@code rawType}
   * set).
   *
   * @param commandClass the command class of a typed handler, else null
   * @param rawType the type name of a raw handler, else null
   * @param handler the handler
   */
  public record Registration(
      Class<?> commandClass, String rawType, CommandHandler<Object> handler) {}

  private final List<Registration> registrations;

  private CommandHandlers(List<Registration> registrations) {
    this.registrations = Collections.unmodifiableList(registrations);
  }

  /** A new builder. */
  public static Builder builder() {
    return new Builder();
  }

  /** Every registration, in registration order. */
  public List<Registration> registrations() {
    return registrations;
  }

  /**
   * Builds {@link CommandHandlers}. Setters reject nulls and blank names with an {@link
   * IllegalArgumentException}; {@link #build()} rejects duplicates and an empty registry with an
   * {@link IllegalStateException}.
   */
  public static final class Builder {
    private final List<Registration> registrations = new ArrayList<>();

    private Builder() {}

    /** Handles commands of {@code commandClass}, decoded by the queue's codec. */
    @SuppressWarnings("unchecked")
    public <C> Builder on(Class<C> commandClass, CommandHandler<? super C> handler) {
      if (commandClass == null) {
        throw new IllegalArgumentException("command class must not be null");
      }
      if (handler == null) {
        throw new IllegalArgumentException(
            "handler of " + commandClass.getName() + " must not be null");
      }
      registrations.add(new Registration(commandClass, null, (CommandHandler<Object>) handler));
      return this;
    }

    /**
     * Handles commands stored under the type name {@code type} without decoding them: the handler
     * gets the payload bytes (for commands enqueued raw, e.g. by another service).
     */
    @SuppressWarnings("unchecked")
    public Builder onRaw(String type, CommandHandler<byte[]> handler) {
      if (type == null || type.isBlank()) {
        throw new IllegalArgumentException("raw handler type must not be blank");
      }
      if (type.length() > CommandQueue.MAX_TYPE_LENGTH) {
        throw new IllegalArgumentException(
            "raw handler type must be at most "
                + CommandQueue.MAX_TYPE_LENGTH
                + " characters: "
                + type.length());
      }
      Inputs.key("raw handler type", type);
      if (handler == null) {
        throw new IllegalArgumentException("handler of '" + type + "' must not be null");
      }
      Object h = handler;
      registrations.add(new Registration(null, type, (CommandHandler<Object>) h));
      return this;
    }

    /** The registry; rejects a class or type name registered twice, and an empty registry. */
    public CommandHandlers build() {
      if (registrations.isEmpty()) {
        throw new IllegalStateException("no command handlers registered");
      }
      Set<Object> seen = new LinkedHashSet<>();
      for (Registration r : registrations) {
        Object key = r.commandClass() != null ? r.commandClass() : r.rawType();
        if (!seen.add(key)) {
          throw new IllegalStateException(
              "duplicate command handler for "
                  + (r.commandClass() != null
                      ? "class " + r.commandClass().getName()
                      : "type '" + r.rawType() + "'"));
        }
      }
      return new CommandHandlers(new ArrayList<>(registrations));
    }
  }
}
