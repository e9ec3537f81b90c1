package org.messagepump.eventstream;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.messagepump.core.spi.Inputs;

/**
 * An immutable registry of one handler's event handlers, one per event class (typed handlers and
 * projections, decoded by the store's codec) or per type name (raw handlers, given the payload
 * bytes). {@link EventStore#driver(String, EventHandlers)} turns it into the driver of a handler
 * key, which reads exactly the types registered here.
 *
 * <pre>{@code
 * EventHandlers handlers = EventHandlers.builder()
 *     .on(OrderPlaced.class, (e, ctx) -> insertOrder(ctx.tx(), e))
 *     .project(OrderShipped.class, (e, ctx) -> view.apply(e, ctx.streamId(), ctx.nextOffset()))
 *     .onRaw("audit.Recorded", (bytes, ctx) -> audit.write(ctx.tx(), bytes))
 *     .build();
 * }</pre>
 */
public final class EventHandlers {

  /** A registered handler, any kind, answering the projection's next offset. */
  interface Invocation {
    long invoke(Object event, EventContext ctx) throws Exception;
  }

  /**
   * One registration: a typed one ({@code eventClass} set: the event is decoded) or a raw one
   * ({@code rawType} set: the event is its payload bytes).
   */
  record Registration(Class<?> eventClass, String rawType, Invocation invocation) {}

  private final List<Registration> registrations;

  private EventHandlers(List<Registration> registrations) {
    this.registrations = List.copyOf(registrations);
  }

  /** A new builder. */
  public static Builder builder() {
    return new Builder();
  }

  /** Every registration, in registration order. */
  List<Registration> registrations() {
    return registrations;
  }

  /**
   * Builds {@link EventHandlers}. Setters reject nulls and blank type names with an {@link
   * IllegalArgumentException}; {@link #build()} rejects an empty registry and a class or type name
   * registered twice with an {@link IllegalStateException}.
   */
  public static final class Builder {
    private final List<Registration> registrations = new ArrayList<>();

    private Builder() {}

    /**
     * Handles events of {@code eventClass}, decoded by the store's codec; on return the checkpoint
     * advances past the event.
     */
    public <E> Builder on(Class<E> eventClass, EventHandler<? super E> handler) {
      checked(eventClass, handler);
      registrations.add(
          new Registration(
              eventClass,
              null,
              (e, ctx) -> {
                handler.handle(eventClass.cast(e), ctx);
                return ctx.nextOffset();
              }));
      return this;
    }

    /**
     * Handles events of {@code eventClass}, decoded by the store's codec, with a handler that
     * reports its own checkpoint (the optimistic path, see {@link ProjectionHandler}).
     */
    public <E> Builder project(Class<E> eventClass, ProjectionHandler<? super E> handler) {
      checked(eventClass, handler);
      registrations.add(
          new Registration(eventClass, null, (e, ctx) -> handler.handle(eventClass.cast(e), ctx)));
      return this;
    }

    /**
     * Handles events stored under the type name {@code type} without decoding them: the handler
     * gets the payload bytes (for events appended by another service, or a type this codec does not
     * know). On return the checkpoint advances past the event.
     */
    public Builder onRaw(String type, EventHandler<byte[]> handler) {
      if (type == null || type.isBlank()) {
        throw new IllegalArgumentException("raw handler type must not be blank");
      }
      // A type name no event can be stored under (NUL, over the key limit) would fail every poll.
      Inputs.key("raw handler type", type);
      if (handler == null) {
        throw new IllegalArgumentException("handler of '" + type + "' must not be null");
      }
      registrations.add(
          new Registration(
              null,
              type,
              (e, ctx) -> {
                handler.handle((byte[]) e, ctx);
                return ctx.nextOffset();
              }));
      return this;
    }

    private static void checked(Class<?> eventClass, Object handler) {
      if (eventClass == null) {
        throw new IllegalArgumentException("event class must not be null");
      }
      if (handler == null) {
        throw new IllegalArgumentException(
            "handler of " + eventClass.getName() + " must not be null");
      }
    }

    /** The registry; rejects a class or type name registered twice, and an empty registry. */
    public EventHandlers build() {
      if (registrations.isEmpty()) {
        throw new IllegalStateException(
            "at least one event handler (on, project or onRaw) is required");
      }
      Set<Object> seen = new HashSet<>();
      for (Registration r : registrations) {
        Object key = r.eventClass() != null ? r.eventClass() : r.rawType();
        if (!seen.add(key)) {
          throw new IllegalStateException(
              "duplicate event handler for "
                  + (r.eventClass() != null
                      ? "class " + r.eventClass().getName()
                      : "type '" + r.rawType() + "'"));
        }
      }
      return new EventHandlers(registrations);
    }
  }
}
