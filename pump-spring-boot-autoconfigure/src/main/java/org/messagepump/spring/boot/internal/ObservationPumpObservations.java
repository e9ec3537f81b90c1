package org.messagepump.spring.boot.internal;

import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import java.util.LinkedHashMap;
import java.util.Map;
import org.messagepump.core.HandlerTimeoutException;
import org.messagepump.core.ProducerHook;
import org.messagepump.core.spi.Delivery;
import org.messagepump.core.spi.HandlerInterceptor;
import org.messagepump.core.spi.Outcome;

/**
 * Messaging through Micrometer's Observation API, so that Spring Boot's tracing bridge
 * (OpenTelemetry or Brave) makes spans of it and its meter handler timers:
 *
 * <ul>
 *   <li>each enqueue, append and store is an observation {@value #SEND} with a {@link
 *       SenderContext} of kind {@code PRODUCER} ({@code "send <destination>"}); the tracing handler
 *       injects its span's context into the context's carrier, whose entries become the messages'
 *       headers;
 *   <li>each delivery is an observation {@value #PROCESS} with a {@link ReceiverContext} of kind
 *       {@code CONSUMER} ({@code "process <type>"}) on the message's headers, so its span is a
 *       child of the producer's; its scope is open while the handler runs, so what the handler
 *       sends joins the trace.
 * </ul>
 *
 * <p>Key values follow the OpenTelemetry messaging semantic conventions ({@code
 * messaging.system=messagepump}); the low-cardinality ones (system, operation, destination, driver,
 * consumer group, outcome) also tag the timers; the message id, the batch size and {@code
 * error.type} (set on failure only: the exception's class name, {@code busy}, or {@code timeout}
 * for a handler that ran past its timeout) are high-cardinality, on the spans only.
 */
public final class ObservationPumpObservations implements PumpObservations {

  /** The observation (and timer) name of a write. */
  public static final String SEND = "messagepump.send";

  /** The observation (and timer) name of a delivery. */
  public static final String PROCESS = "messagepump.process";

  static final String SYSTEM = "messagepump";

  /** The {@code error.type} of a delivery whose handler ran past its timeout. */
  static final String TIMEOUT = "timeout";

  private final ObservationRegistry registry;
  private final ProducerHook hook;

  /**
   * Observations in {@code registry}.
   *
   * @throws IllegalArgumentException when {@code registry} is null
   */
  public ObservationPumpObservations(ObservationRegistry registry) {
    if (registry == null) {
      throw new IllegalArgumentException("registry must not be null");
    }
    this.registry = registry;
    this.hook = this::beforeSend;
  }

  @Override
  public ProducerHook producerHook() {
    return hook;
  }

  @Override
  public HandlerInterceptor interceptor(String pumpName) {
    if (pumpName == null || pumpName.isBlank()) {
      throw new IllegalArgumentException("pumpName must not be blank");
    }
    return new ObservingInterceptor(registry, pumpName);
  }

  private ProducerHook.Send beforeSend(ProducerHook.Outgoing outgoing) {
    SenderContext<Map<String, String>> context =
        new SenderContext<>((carrier, key, value) -> carrier.put(key, value), Kind.PRODUCER);
    context.setCarrier(new LinkedHashMap<>());
    String destination = outgoing.destination();
    KeyValues low =
        KeyValues.of(
            KeyValue.of("messaging.system", SYSTEM),
            KeyValue.of("messaging.operation.type", "send"),
            KeyValue.of("messaging.operation.name", "send"),
            KeyValue.of("messaging.destination.name", destination == null ? "" : destination),
            KeyValue.of("messagepump.driver", outgoing.driver()));
    Observation observation =
        Observation.createNotStarted(SEND, () -> context, registry)
            .contextualName(destination == null ? "send" : "send " + destination)
            .lowCardinalityKeyValues(low);
    if (outgoing.messageCount() > 1) {
      observation.highCardinalityKeyValue(
          "messaging.batch.message_count", Integer.toString(outgoing.messageCount()));
    }
    if (outgoing.messageId() != null) {
      observation.highCardinalityKeyValue("messaging.message.id", outgoing.messageId());
    }
    observation.start();
    return new ObservedSend(observation, context, outgoing.messageId() == null);
  }

  private record ObservedSend(
      Observation observation, SenderContext<Map<String, String>> context, boolean idUnknown)
      implements ProducerHook.Send {

    @Override
    public Map<String, String> headers() {
      Map<String, String> carrier = context.getCarrier();
      return carrier == null ? Map.of() : carrier;
    }

    @Override
    public void sent(String messageId) {
      if (idUnknown && messageId != null) {
        observation.highCardinalityKeyValue("messaging.message.id", messageId);
      }
      observation.stop();
    }

    @Override
    public void failed(Throwable failure) {
      observation.highCardinalityKeyValue("error.type", failure.getClass().getName());
      observation.error(failure);
      observation.stop();
    }
  }

  /**
   * Runs each delivery in a {@value #PROCESS} observation whose context reads the headers, open
   * while the handler runs and stopped with the outcome as the pump decided it.
   */
  static final class ObservingInterceptor implements HandlerInterceptor {

    private final ObservationRegistry registry;
    private final String group;

    ObservingInterceptor(ObservationRegistry registry, String group) {
      this.registry = registry;
      this.group = group;
    }

    @Override
    public Outcome intercept(Handling handling) {
      Delivery delivery = handling.delivery();
      ReceiverContext<Map<String, String>> context =
          new ReceiverContext<>((carrier, key) -> carrier.get(key), Kind.CONSUMER);
      context.setCarrier(delivery.envelope().headers());
      Observation observation =
          Observation.createNotStarted(PROCESS, () -> context, registry)
              .contextualName("process " + delivery.messageType())
              .lowCardinalityKeyValues(
                  KeyValues.of(
                      KeyValue.of("messaging.system", SYSTEM),
                      KeyValue.of("messaging.operation.type", "process"),
                      KeyValue.of("messaging.operation.name", "process"),
                      KeyValue.of("messaging.destination.name", delivery.messageType()),
                      KeyValue.of("messaging.consumer.group.name", group),
                      KeyValue.of("messagepump.driver", handling.driverName())))
              .highCardinalityKeyValue("messaging.message.id", delivery.messageId())
              .highCardinalityKeyValue(
                  "messagepump.delivery.attempt", Integer.toString(delivery.attempt()));
      String correlation = delivery.envelope().correlationId();
      if (correlation != null) {
        observation.highCardinalityKeyValue("messaging.message.conversation_id", correlation);
      }
      observation.start();
      try (Observation.Scope ignored = observation.openScope()) {
        Outcome outcome = handling.proceed();
        if (outcome instanceof Outcome.Failed f) {
          failed(observation, f.cause());
        } else if (outcome instanceof Outcome.Busy) {
          busy(observation);
        } else {
          observation.lowCardinalityKeyValue("messagepump.outcome", "handled");
        }
        return outcome;
      } finally {
        observation.stop();
      }
    }

    /**
     * A failure: {@code error.type} is {@value #TIMEOUT} for a handler that ran past its timeout,
     * else the exception's class name.
     */
    private static void failed(Observation observation, Throwable cause) {
      outcome(
          observation,
          "failed",
          cause instanceof HandlerTimeoutException ? TIMEOUT : cause.getClass().getName());
      observation.error(cause);
    }

    private static void busy(Observation observation) {
      outcome(observation, "busy", "busy");
    }

    /**
     * The outcome tags the timer; {@code error.type} is set on failure only (the conventions keep
     * it off successful operations), so it is high-cardinality: timers with and without it would
     * not share their tag keys. The meter handler's own {@code error} tag covers the timers.
     */
    private static void outcome(Observation observation, String outcome, String errorType) {
      observation.lowCardinalityKeyValue("messagepump.outcome", outcome);
      observation.highCardinalityKeyValue("error.type", errorType);
    }
  }
}
