package org.messagepump.console.internal;

import io.micrometer.core.instrument.MeterRegistry;
import jakarta.servlet.http.HttpServletRequest;
import java.util.function.Function;

/**
 * The engine's view of {@code Settings} (a copy, so that internal code does not depend on the API
 * package and the two packages form no cycle).
 */
public record Settings(
    boolean readOnly,
    boolean showPayloads,
    String accessToken,
    boolean remoteWithoutToken,
    String title,
    MeterRegistry meterRegistry,
    Function<HttpServletRequest, String> actor) {

  /** Who made a request, as the audit log names them. */
  public String actorOf(HttpServletRequest request) {
    return actor.apply(request);
  }
}
