package org.messagepump.spring.boot;

import org.messagepump.core.engine.PumpHealth;

/**
 * One pump of the {@link MessagePumpRegistry}. It outlives the {@code MessagePump} it controls: the
 * context builds a new pump each time it starts, and the handle applies to whichever runs, so a
 * pause holds across a stop and a start of the context.
 */
public interface PumpHandle {

  /** The pump's name. */
  String name();

  /**
   * Stops acquiring in this process until {@link #resume()}: batches already running finish and
   * commit, no new transaction is opened. While the context is stopped, the pump will start paused.
   * Other processes keep acquiring (a cluster-wide pause is the driver's, such as {@code
   * CommandOperations.pauseType}).
   */
  void pause();

  /** Acquires again after {@link #pause()}, at once. */
  void resume();

  /** True between {@link #pause()} and {@link #resume()}. */
  boolean isPaused();

  /** True while the pump runs (between the context's start and stop). */
  boolean isRunning();

  /**
   * The pump's acquisition health, read from memory: {@code RUNNING}, {@code DEGRADED} (its polls
   * fail: since when and the last error) or {@code STOPPED} (the context is not running). A paused
   * pump that runs reports {@code RUNNING}; see {@link #isPaused()}.
   */
  PumpHealth health();

  /** Ends the pump's current idle wait at once (there may be new work); nothing when stopped. */
  void wake();
}
