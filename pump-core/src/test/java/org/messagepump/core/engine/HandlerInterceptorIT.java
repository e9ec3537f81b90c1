package org.messagepump.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.BusyException;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.engine.PumpTester.Kind;
import org.messagepump.core.examples.TinyTable;
import org.messagepump.core.examples.TinyTableDriver;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Outcome;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/**
 * Interceptors around the handling of each delivery, through the pump's real poll path: their
 * order, what they see, the outcome as the pump decided it (a handler timeout included), and the
 * rules that keep the pump's bookkeeping whole whatever an interceptor does.
 */
@ExtendWith(PostgresExtension.class)
class HandlerInterceptorIT {

  private TestDatabase db;
  private final List<String> events = new CopyOnWriteArrayList<>();

  @BeforeEach
  void schema(TestDatabase db) {
    this.db = db;
    db.execute("DROP TABLE IF EXISTS work, work_parked, audit");
    db.execute(TinyTable.SCHEMA);
    db.execute("CREATE TABLE audit (id bigint)");
    db.execute("INSERT INTO work (body) VALUES ('one')");
  }

  private TinyTableDriver writing() {
    return new TinyTableDriver(
        (tx, id, body) -> {
          events.add("handler");
          tx.dsl().execute("INSERT INTO audit VALUES (?)", id);
          return Outcome.HANDLED;
        });
  }

  private HandlerInterceptor recording(String name, List<Outcome> seen) {
    return handling -> {
      events.add(name + " before");
      Outcome o = handling.proceed();
      seen.add(o);
      events.add(name + " after");
      return o;
    };
  }

  private PumpTester.Builder tester(TinyTableDriver driver) {
    return PumpTester.builder(db.dataSource(), driver)
        .backoff(Duration.ofMillis(1), Duration.ofMillis(1));
  }

  @Test
  void interceptorsRunInOrderAroundTheHandlerAndSeeTheDeliveryAndItsOutcome() {
    List<Outcome> outer = new CopyOnWriteArrayList<>();
    List<Outcome> inner = new CopyOnWriteArrayList<>();
    AtomicReference<String> seen = new AtomicReference<>();
    PumpTester t =
        tester(writing())
            .interceptor(recording("outer", outer))
            .interceptor(
                handling -> {
                  seen.set(
                      handling.pumpName()
                          + "/"
                          + handling.driverName()
                          + "/"
                          + handling.delivery().messageType()
                          + "/"
                          + handling.delivery().attempt()
                          + "/"
                          + (handling.tx() != null));
                  return handling.proceed();
                })
            .interceptor(recording("inner", inner))
            .build();
    assertThat(t.runOnce()).extracting(PumpTester.Result::kind).containsExactly(Kind.HANDLED);
    assertThat(events)
        .containsExactly("outer before", "inner before", "handler", "inner after", "outer after");
    assertThat(seen.get()).isEqualTo("tester/tiny-table/work/1/true");
    assertThat(outer).containsExactly(Outcome.HANDLED);
    assertThat(inner).containsExactly(Outcome.HANDLED);
    assertThat(db.queryLong("SELECT count(*) FROM audit")).isOne();
  }

  @Test
  void anInterceptorMayFailAHandledDeliveryWhoseWritesThenRollBack() {
    IllegalStateException refused = new IllegalStateException("refused by the interceptor");
    List<Outcome> outer = new CopyOnWriteArrayList<>();
    PumpTester t =
        tester(writing())
            .interceptor(recording("outer", outer))
            .interceptor(
                handling -> {
                  handling.proceed();
                  return Outcome.failed(refused);
                })
            .build();
    List<PumpTester.Result> r = t.runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(Kind.FAILED);
    assertThat(r.get(0).cause()).isSameAs(refused);
    assertThat(outer).containsExactly(Outcome.failed(refused));
    assertThat(db.queryLong("SELECT count(*) FROM audit")).isZero();
    assertThat(db.queryLong("SELECT failures FROM work")).isEqualTo(1);
  }

  @Test
  void anInterceptorCannotTurnAFailedDeliveryIntoAHandledOne() {
    IllegalArgumentException thrown = new IllegalArgumentException("handler fails");
    PumpTester t =
        tester(
                new TinyTableDriver(
                    (tx, id, body) -> {
                      throw thrown;
                    }))
            .interceptor(
                handling -> {
                  handling.proceed();
                  return Outcome.HANDLED;
                })
            .build();
    List<PumpTester.Result> r = t.runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(Kind.FAILED);
    assertThat(r.get(0).cause()).isSameAs(thrown);
    assertThat(db.queryLong("SELECT failures FROM work")).isEqualTo(1);
  }

  @Test
  void whatAnInterceptorThrowsIsClassifiedAsAHandlersException() {
    PumpTester busy =
        tester(writing())
            .interceptor(
                handling -> {
                  throw new BusyException("rate limited");
                })
            .build();
    assertThat(busy.runOnce()).extracting(PumpTester.Result::kind).containsExactly(Kind.BUSY);
    assertThat(events).as("the handler never ran").isEmpty();
    assertThat(db.queryLong("SELECT failures FROM work")).isZero();
    sleep(20);
    PumpTester failing =
        tester(writing())
            .interceptor(
                handling -> {
                  handling.proceed();
                  throw new java.io.IOException("flush failed");
                })
            .build();
    List<PumpTester.Result> r = failing.runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(Kind.FAILED);
    assertThat(r.get(0).cause()).hasMessage("flush failed");
    assertThat(db.queryLong("SELECT count(*) FROM audit")).as("rolled back").isZero();
  }

  @Test
  void anInterceptorThatDoesNotProceedOrProceedsTwiceFailsTheDelivery() {
    PumpTester skipping = tester(writing()).interceptor(handling -> Outcome.HANDLED).build();
    List<PumpTester.Result> r = skipping.runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(Kind.FAILED);
    assertThat(r.get(0).cause())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("without calling proceed()");
    assertThat(events).isEmpty();
    sleep(20);
    AtomicReference<Throwable> second = new AtomicReference<>();
    PumpTester twice =
        tester(writing())
            .interceptor(
                handling -> {
                  Outcome o = handling.proceed();
                  try {
                    handling.proceed();
                  } catch (IllegalStateException e) {
                    second.set(e);
                  }
                  return o;
                })
            .build();
    assertThat(twice.runOnce()).extracting(PumpTester.Result::kind).containsExactly(Kind.HANDLED);
    assertThat(events).containsExactly("handler");
    assertThat(second.get()).hasMessageContaining("second time");
  }

  @Test
  void aHandlerTimeoutReachesTheInterceptorsAsATimeoutWhateverTheHandlerReturned() {
    List<Outcome> seen = new CopyOnWriteArrayList<>();
    PumpTester t =
        tester(
                new TinyTableDriver(
                    (tx, id, body) -> {
                      try {
                        Thread.sleep(30_000); // interrupted by the timeout
                      } catch (InterruptedException e) {
                        // swallowed: the handler returns normally all the same
                      }
                      return Outcome.HANDLED;
                    }))
            .handlerTimeout(Duration.ofMillis(200))
            .interceptor(recording("outer", seen))
            .build();
    List<PumpTester.Result> r = t.runOnce();
    assertThat(r).extracting(PumpTester.Result::kind).containsExactly(Kind.FAILED);
    assertThat(r.get(0).cause()).isInstanceOf(HandlerTimeoutException.class);
    assertThat(seen).hasSize(1);
    assertThat(seen.get(0)).isInstanceOf(Outcome.Failed.class);
    assertThat(((Outcome.Failed) seen.get(0)).cause()).isInstanceOf(HandlerTimeoutException.class);
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
  }

  @Test
  void aPumpRunsItsInterceptorsOnItsWorkers() {
    List<String> threads = new CopyOnWriteArrayList<>();
    try (MessagePump pump =
        MessagePump.builder(db.dataSource())
            .name("intercepted")
            .driver(writing())
            .options(PumpOptions.defaults().withWorkers(1).withPollInterval(Duration.ofMillis(50)))
            .interceptor(
                handling -> {
                  threads.add(Thread.currentThread().getName());
                  return handling.proceed();
                })
            .build()) {
      pump.start();
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> db.queryLong("SELECT count(*) FROM work") == 0);
    }
    assertThat(threads).containsExactly("pump-intercepted-worker-1");
    assertThat(db.queryLong("SELECT count(*) FROM audit")).isOne();
  }

  @Test
  void theBuildersRefuseANullInterceptor() {
    assertThatThrownBy(() -> MessagePump.builder(db.dataSource()).interceptor(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("interceptor");
    assertThatThrownBy(() -> tester(writing()).interceptor(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("interceptor");
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
