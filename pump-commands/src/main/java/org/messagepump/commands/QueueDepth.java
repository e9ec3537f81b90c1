package org.messagepump.commands;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * How many commands the queue holds, per type: due now, delayed (due later) and parked in dead
 * letters, counted with the database clock.
 *
 * @param byType the counts per type name, sorted by name
 */
public record QueueDepth(Map<String, TypeDepth> byType) {

  /** Copies the map (sorted by type name). */
  public QueueDepth {
    byType = Collections.unmodifiableMap(new TreeMap<>(byType));
  }

  /** The counts of one type (zeros when the queue holds none of it). */
  public TypeDepth of(String type) {
    return byType.getOrDefault(type, new TypeDepth(0, 0, 0));
  }

  /** Commands due now, all types. */
  public long due() {
    return byType.values().stream().mapToLong(TypeDepth::due).sum();
  }

  /** Commands due later, all types. */
  public long delayed() {
    return byType.values().stream().mapToLong(TypeDepth::delayed).sum();
  }

  /** Dead letters, all types. */
  public long deadLetters() {
    return byType.values().stream().mapToLong(TypeDepth::deadLetters).sum();
  }

  /** Pending commands (due and delayed), all types. */
  public long pending() {
    return due() + delayed();
  }

  /**
   * The counts of one type.
   *
   * @param due pending and due now
   * @param delayed pending and due later
   * @param deadLetters parked
   */
  public record TypeDepth(long due, long delayed, long deadLetters) {}
}
