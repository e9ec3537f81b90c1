package org.messagepump.spring.boot.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.messagepump.core.MessagePump;
import org.messagepump.core.PumpHealth;
import org.messagepump.spring.boot.MessagePumpRegistry;
import org.messagepump.spring.boot.PumpHandle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The application's pumps, started and stopped with the context. Stopping closes every pump at
 * once, each draining its in-flight deliveries within its own {@code shutdown-grace} (then
 * interrupting and rolling back what is left: those deliveries come back), so the context waits
 * about the longest grace period, not their sum. Keep each grace period below Spring's {@code
 * spring.lifecycle.timeout-per-shutdown-phase} (30 s by default). Also the public {@link
 * MessagePumpRegistry}: a pump paused through its handle stays paused across a stop and a start.
 */
public final class MessagePumps implements SmartLifecycle, MessagePumpRegistry {

  private static final Logger log = LoggerFactory.getLogger(MessagePumps.class);

  private final List<String> names;
  private final Function<String, MessagePump> factory;
  private final boolean autoStartup;
  private final Map<String, MessagePump> running = new LinkedHashMap<>();
  private final Set<String> paused = ConcurrentHashMap.newKeySet();
  private final Map<String, PumpHandle> handles = new LinkedHashMap<>();

  /**
   * Pumps named {@code names}, each built by {@code factory} when the context starts (a pump starts
   * once, so a restart after a stop builds new ones).
   */
  public MessagePumps(
      List<String> names, Function<String, MessagePump> factory, boolean autoStartup) {
    this.names = List.copyOf(names);
    this.factory = factory;
    this.autoStartup = autoStartup;
    for (String name : this.names) {
      handles.put(name, new Handle(name));
    }
  }

  /** The running pumps by name (empty while stopped). */
  public synchronized Map<String, MessagePump> pumps() {
    return Collections.unmodifiableMap(new LinkedHashMap<>(running));
  }

  /** The configured pump names, in declaration order. */
  @Override
  public List<String> names() {
    return names;
  }

  @Override
  public PumpHandle pump(String name) {
    PumpHandle h = handles.get(name);
    if (h == null) {
      throw new IllegalArgumentException("no pump named '" + name + "'; pumps: " + names);
    }
    return h;
  }

  private synchronized MessagePump current(String name) {
    return running.get(name);
  }

  @Override
  public synchronized void start() {
    if (!running.isEmpty()) {
      return;
    }
    for (String name : names) {
      MessagePump pump = factory.apply(name);
      running.put(name, pump);
      if (paused.contains(name)) {
        pump.pause(); // a pump paused before start starts paused
      }
      pump.start();
    }
  }

  @Override
  public void stop() {
    List<MessagePump> closing;
    synchronized (this) {
      closing = new ArrayList<>(running.values());
    }
    List<Thread> threads = new ArrayList<>();
    for (MessagePump pump : closing) {
      Thread t = new Thread(pump::close, "pump-" + pump.name() + "-stop");
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        log.warn("interrupted while stopping the pumps; some may still be draining");
        return;
      }
    }
    synchronized (this) {
      running.clear();
    }
  }

  @Override
  public synchronized boolean isRunning() {
    return !running.isEmpty();
  }

  @Override
  public boolean isAutoStartup() {
    return autoStartup;
  }

  /**
   * The default phase of SmartLifecycle beans: the last to start and the first to stop (before the
   * web server's graceful shutdown); the DataSource is closed only after every phase has stopped.
   */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE;
  }

  /** A pump's handle: applies to the running pump of that name, if any. */
  private final class Handle implements PumpHandle {
    private final String name;

    Handle(String name) {
      this.name = name;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public void pause() {
      synchronized (MessagePumps.this) {
        paused.add(name);
        MessagePump pump = running.get(name);
        if (pump != null) {
          pump.pause();
        }
      }
    }

    @Override
    public void resume() {
      synchronized (MessagePumps.this) {
        paused.remove(name);
        MessagePump pump = running.get(name);
        if (pump != null) {
          pump.resume();
        }
      }
    }

    @Override
    public boolean isPaused() {
      return paused.contains(name);
    }

    @Override
    public boolean isRunning() {
      MessagePump pump = current(name);
      return pump != null && pump.isRunning();
    }

    @Override
    public PumpHealth health() {
      MessagePump pump = current(name);
      return pump != null ? pump.health() : new PumpHealth(PumpHealth.State.STOPPED, null, null);
    }

    @Override
    public void wake() {
      MessagePump pump = current(name);
      if (pump != null) {
        pump.wake();
      }
    }

    @Override
    public String toString() {
      return "PumpHandle[" + name + "]";
    }
  }
}
