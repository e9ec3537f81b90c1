package org.messagepump.core.spi;

import java.util.function.DoubleSupplier;
import java.util.function.ToDoubleFunction;

/** {@link Meters#none()}. */
final class NoMeters implements Meters {

  static final NoMeters INSTANCE = new NoMeters();

  private static final Counter COUNTER =
      new Counter() {
        @Override
        public void increment() {}

        @Override
        public void increment(double amount) {}
      };

  private static final Timer TIMER = nanos -> {};

  private NoMeters() {}

  @Override
  public Counter counter(String name, String description, String... tags) {
    return COUNTER;
  }

  @Override
  public Timer timer(String name, String description, String... tags) {
    return TIMER;
  }

  @Override
  public <T> void gauge(
      String name, String description, T state, ToDoubleFunction<T> value, String... tags) {}

  @Override
  public void gauge(
      String name, String description, String baseUnit, DoubleSupplier value, String... tags) {}
}
