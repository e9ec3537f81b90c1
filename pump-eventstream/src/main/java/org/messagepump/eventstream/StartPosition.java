package org.messagepump.eventstream;

/**
 * Where a new handler starts reading: what its checkpoints are when it first runs. It applies once,
 * when the handler key is first registered (its first poll); afterwards the checkpoints decide.
 * Streams created after the registration are always read from their first event.
 */
public enum StartPosition {
  /** Every existing stream from offset 0: the handler sees every past event (a tail token). */
  BEGINNING,
  /**
   * Every existing stream from its committed end at registration: the handler sees only events
   * appended afterwards (a head token), e.g. a process manager that must not act on the past.
   */
  END
}
