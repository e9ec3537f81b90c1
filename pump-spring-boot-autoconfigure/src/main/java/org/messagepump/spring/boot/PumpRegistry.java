package org.messagepump.spring.boot;

import java.util.List;
import org.messagepump.core.engine.PumpHealth;
import org.messagepump.spring.boot.internal.MessagePumps;

/**
 * The {@link MessagePumpRegistry} bean: a handle per configured pump over the context's {@link
 * MessagePumps}, which builds, starts and stops them.
 */
final class PumpRegistry implements MessagePumpRegistry {

  private final MessagePumps pumps;

  PumpRegistry(MessagePumps pumps) {
    this.pumps = pumps;
  }

  @Override
  public List<String> names() {
    return pumps.names();
  }

  @Override
  public PumpHandle pump(String name) {
    return new Handle(pumps, pumps.configured(name));
  }

  /** A pump's handle: applies to the running pump of that name, if any. */
  private record Handle(MessagePumps pumps, String name) implements PumpHandle {

    @Override
    public void pause() {
      pumps.pause(name);
    }

    @Override
    public void resume() {
      pumps.resume(name);
    }

    @Override
    public boolean isPaused() {
      return pumps.isPaused(name);
    }

    @Override
    public boolean isRunning() {
      return pumps.isRunning(name);
    }

    @Override
    public PumpHealth health() {
      return pumps.health(name);
    }

    @Override
    public void wake() {
      pumps.wake(name);
    }

    @Override
    public String toString() {
      return "PumpHandle[" + name + "]";
    }
  }
}
