package org.messagepump.commands;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * How many commands the queue holds, per type: due now, delayed (due later), running under a lease
 * (lease mode, docs/leases.md) and parked in dead letters, counted with the database clock in one
 * statement. A leased command counts as leased only, never as due or delayed, whatever its lease's
 * expiry.
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
    return byType.getOrDefault(type, new TypeDepth(0, 0, 0, 0));
  }

  /** Commands due now, all types. */
  public long due() {
    return byType.values().stream().mapToLong(TypeDepth::due).sum();
  }

  /** Commands due later, all types. */
  public long delayed() {
    return byType.values().stream().mapToLong(TypeDepth::delayed).sum();
  }

  /** Commands running under a lease (lease mode), all types. */
  public long leased() {
    return byType.values().stream().mapToLong(TypeDepth::leased).sum();
  }

  /** Dead letters, all types. */
  public long deadLetters() {
    return byType.values().stream().mapToLong(TypeDepth::deadLetters).sum();
  }

  /** Pending commands (due, delayed and leased), all types. */
  public long pending() {
    return due() + delayed() + leased();
  }

  /**
   * The counts of one type.
   *
   * @param due pending, not leased, and due now
   * @param delayed pending, not leased, and due later
   * @param deadLetters parked
   * @param leased pending and held by a lease: its handler runs (lease mode)
   */
  public record TypeDepth(long due, long delayed, long deadLetters, long leased) {

    /** The counts of a type none of whose commands is leased. */
    public TypeDepth(long due, long delayed, long deadLetters) {
      this(due, delayed, deadLetters, 0);
    }
  }
}
