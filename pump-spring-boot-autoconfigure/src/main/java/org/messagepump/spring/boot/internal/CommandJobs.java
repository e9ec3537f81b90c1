package org.messagepump.spring.boot.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.messagepump.commands.CommandQueue;
import org.messagepump.commands.CommandRetention;
import org.messagepump.commands.CommandScheduler;
import org.messagepump.commands.Schedule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The command queue's background jobs, started and stopped with the context: the scheduler that
 * fires recurring schedules (after defining the application's {@link Schedule} beans) and the
 * retention job. Each is built once at construction, so a wrong option fails the application's
 * start-up with the builder's {@link IllegalArgumentException}; a restart after a stop builds new
 * ones (each starts once).
 */
public final class CommandJobs implements SmartLifecycle {

  private static final Logger log = LoggerFactory.getLogger(CommandJobs.class);

  private final CommandQueue queue;
  private final List<Schedule> schedules;
  private final Supplier<CommandScheduler> scheduler; // null: not run here
  private final Supplier<CommandRetention> retention; // null: not run here
  private CommandScheduler runningScheduler;
  private CommandRetention runningRetention;
  private CommandScheduler builtScheduler;
  private CommandRetention builtRetention;
  private boolean running;

  /**
   * Jobs of {@code queue}: {@code schedules} defined at each start; {@code scheduler} and {@code
   * retention} (either may be null: that job does not run in this process) build the jobs.
   */
  public CommandJobs(
      CommandQueue queue,
      List<Schedule> schedules,
      Supplier<CommandScheduler> scheduler,
      Supplier<CommandRetention> retention) {
    this.queue = queue;
    this.schedules = List.copyOf(schedules);
    this.scheduler = scheduler;
    this.retention = retention;
    this.builtScheduler = scheduler == null ? null : scheduler.get();
    this.builtRetention = retention == null ? null : retention.get();
  }

  /** Whether this process fires the schedules. */
  public boolean runsScheduler() {
    return scheduler != null;
  }

  /** Whether this process runs the retention job. */
  public boolean runsRetention() {
    return retention != null;
  }

  /** The running scheduler, or null (stopped, or not run here). */
  public synchronized CommandScheduler scheduler() {
    return runningScheduler;
  }

  /** The running retention job, or null (stopped, or not run here). */
  public synchronized CommandRetention retention() {
    return runningRetention;
  }

  @Override
  public synchronized void start() {
    if (running) {
      return;
    }
    List<String> created = new ArrayList<>();
    for (Schedule s : schedules) {
      if (queue.defineSchedule(s)) {
        created.add(s.name());
      }
    }
    if (!schedules.isEmpty()) {
      log.info(
          "defined {} schedule(s) in {} ({} new: {})",
          schedules.size(),
          queue.schema(),
          created.size(),
          created);
    }
    if (scheduler != null) {
      runningScheduler = builtScheduler != null ? builtScheduler : scheduler.get();
      builtScheduler = null;
      runningScheduler.start();
    }
    if (retention != null) {
      runningRetention = builtRetention != null ? builtRetention : retention.get();
      builtRetention = null;
      runningRetention.start();
    }
    running = true;
  }

  @Override
  public synchronized void stop() {
    if (!running) {
      return;
    }
    if (runningScheduler != null) {
      runningScheduler.close();
      runningScheduler = null;
    }
    if (runningRetention != null) {
      runningRetention.close();
      runningRetention = null;
    }
    running = false;
  }

  @Override
  public synchronized boolean isRunning() {
    return running;
  }

  /** With the pumps: started last, stopped first, before the DataSource closes. */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE;
  }
}
