package org.messagepump.spring.boot.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.messagepump.core.engine.MessagePump;
import org.messagepump.core.engine.PumpHealth;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The application's pumps, started and stopped with the context. Stopping closes every pump at
 * once, each draining its in-flight deliveries within its own {@code shutdown-grace} (then
 * interrupting and rolling back what is left: those deliveries come back), so the context waits
 * about the longest grace period, not their sum. Keep each grace period below Spring's {@code
 * spring.lifecycle.timeout-per-shutdown-phase} (30 s by default). Its per-name operations back the
 * public {@code MessagePumpRegistry}: a pump paused by name stays paused across a stop and a start.
 */
public final class MessagePumps implements SmartLifecycle {

  private static final Logger log = LoggerFactory.getLogger(MessagePumps.class);

  private final List<String> names;
  private final Function<String, MessagePump> factory;
  private final boolean autoStartup;
  private final Map<String, MessagePump> running = new LinkedHashMap<>();
  private final Set<String> paused = ConcurrentHashMap.newKeySet();

  /**
   * Pumps named {@code names}, each built by {@code factory} when the context starts (a pump starts
   * once, so a restart after a stop builds new ones).
   */
  public MessagePumps(
      List<String> names, Function<String, MessagePump> factory, boolean autoStartup) {
    this.names = List.copyOf(names);
    this.factory = factory;
    this.autoStartup = autoStartup;
  }

  /** The running pumps by name (empty while stopped). */
  public synchronized Map<String, MessagePump> pumps() {
    return Collections.unmodifiableMap(new LinkedHashMap<>(running));
  }

  /** The configured pump names, in declaration order. */
  public List<String> names() {
    return names;
  }

  /**
   * {@code name}, checked to be a configured pump.
   *
   * @throws IllegalArgumentException when no pump has that name
   */
  public String configured(String name) {
    if (!names.contains(name)) {
      throw new IllegalArgumentException("no pump named '" + name + "'; pumps: " + names);
    }
    return name;
  }

  private synchronized MessagePump current(String name) {
    return running.get(name);
  }

  /** Pauses the pump {@code name} now if it runs, and every pump of that name started later. */
  public synchronized void pause(String name) {
    paused.add(name);
    MessagePump pump = running.get(name);
    if (pump != null) {
      pump.pause();
    }
  }

  /** Resumes the pump {@code name}, and lets pumps of that name started later run. */
  public synchronized void resume(String name) {
    paused.remove(name);
    MessagePump pump = running.get(name);
    if (pump != null) {
      pump.resume();
    }
  }

  /** Whether the pump {@code name} is paused (by {@link #pause}). */
  public boolean isPaused(String name) {
    return paused.contains(name);
  }

  /** Whether a pump of that name runs now. */
  public boolean isRunning(String name) {
    MessagePump pump = current(name);
    return pump != null && pump.isRunning();
  }

  /** The running pump's health, or STOPPED. */
  public PumpHealth health(String name) {
    MessagePump pump = current(name);
    return pump != null ? pump.health() : new PumpHealth(PumpHealth.State.STOPPED, null, null);
  }

  /** Wakes the running pump of that name, if any. */
  public void wake(String name) {
    MessagePump pump = current(name);
    if (pump != null) {
      pump.wake();
    }
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
}
