package org.messagepump.spring.boot;

import org.messagepump.core.engine.MessagePump;

/**
 * Changes a pump's builder after the {@code messagepump.*} properties are applied, for the options
 * that have no property form (a {@code threadFactory}, say) or for computed values. Declare it as a
 * bean; every customizer is called for every pump, in {@link org.springframework.core.Ordered}
 * order ({@code @Order}, then declaration order), each time the pump is built: when the context
 * starts (and again when it is started after a stop). What a customizer sets wins over the
 * properties. An interceptor it adds ({@code builder.interceptor(...)}) runs inside the
 * auto-configuration's own (the tracing observation, then the delivery's transaction bound to
 * Spring), so the handler's Spring transaction is bound while it runs.
 *
 * <pre>{@code
 * @Bean
 * MessagePumpCustomizer reportWorkers() {
 *   return (pumpName, builder) -> {
 *     if (pumpName.equals("reports")) {
 *       builder.workers(Runtime.getRuntime().availableProcessors());
 *     }
 *   };
 * }
 * }</pre>
 */
@FunctionalInterface
public interface MessagePumpCustomizer {

  /**
   * Customizes the builder of the pump named {@code pumpName}. The builder's setters validate as
   * usual ({@link IllegalArgumentException} naming the option), which fails the context's start.
   */
  void customize(String pumpName, MessagePump.Builder builder);
}
