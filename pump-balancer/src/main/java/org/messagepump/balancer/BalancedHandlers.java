package org.messagepump.balancer;

/**
 * The handler registry of a partition group's driver: immutable, made by {@link #builder()}. A
 * group's messages carry no type, so the registry holds exactly one {@link BalancedHandler}; {@link
 * MessageBalancer#driver(BalancedHandlers)} turns it into a driver.
 *
 * <pre>{@code
 * BalancedHandlers handlers =
 *     BalancedHandlers.builder().on((message, ctx) -> Result.ok()).build();
 * BalancerDriver driver = group.driver(handlers);
 * }</pre>
 */
public final class BalancedHandlers {

  private final BalancedHandler handler;

  private BalancedHandlers(BalancedHandler handler) {
    this.handler = handler;
  }

  /** An empty builder. */
  public static Builder builder() {
    return new Builder();
  }

  /** The group's handler. */
  public BalancedHandler handler() {
    return handler;
  }

  @Override
  public String toString() {
    return "BalancedHandlers[" + handler + "]";
  }

  /**
   * Builds a {@link BalancedHandlers}: {@link #on} rejects null with an {@link
   * IllegalArgumentException}; {@link #build()} rejects no handler and a second one with an {@link
   * IllegalStateException}.
   */
  public static final class Builder {
    private BalancedHandler handler;
    private int registered;

    private Builder() {}

    /**
     * Registers the handler of every message of the group.
     *
     * @throws IllegalArgumentException when {@code handler} is null
     */
    public Builder on(BalancedHandler handler) {
      if (handler == null) {
        throw new IllegalArgumentException("handler must not be null");
      }
      if (registered == 0) {
        this.handler = handler;
      }
      registered++;
      return this;
    }

    /**
     * The registry.
     *
     * @throws IllegalStateException when no handler was registered, or more than one (a group's
     *     messages have one handler)
     */
    public BalancedHandlers build() {
      if (registered == 0) {
        throw new IllegalStateException("no handler registered: call on(handler) once");
      }
      if (registered > 1) {
        throw new IllegalStateException(
            "duplicate handler: a partition group has one handler, on(handler) was called "
                + registered
                + " times");
      }
      return new BalancedHandlers(handler);
    }
  }
}
