package org.messagepump.console.internal;

import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * What the console's request handling reads of its config. {@code ConsoleConfig} holds one and is
 * the public, validated face of it (its accessors read it), so internal code reads the settings
 * without depending on the API package, and the two packages form no cycle.
 *
 * @param meters the pumps' meters, or null without a meter registry
 * @param actorName who a tokenless console names (its one operator)
 * @param operators named tokens, name to token
 * @param identityHeader the header a trusted proxy names the operator in, or null
 * @param trustedProxies the addresses (or CIDR blocks) such a proxy connects from
 * @param allowedHosts host names (besides loopback) requests may address
 * @param tlsInFront true when browsers reach the console over TLS (Secure, __Host- cookies)
 * @param secret the HMAC secret for CSRF tokens and login cookies; null: random per process
 * @param auditSchema the schema of the audit table
 * @param auditRetention how long audit entries are kept
 */
public record Settings(
    boolean readOnly,
    boolean showPayloads,
    String title,
    MeterReadings meters,
    Function<HttpServletRequest, String> actor,
    String actorName,
    Map<String, String> operators,
    String identityHeader,
    List<String> trustedProxies,
    boolean remoteWithoutToken,
    List<String> allowedHosts,
    boolean tlsInFront,
    byte[] secret,
    Duration loginTtl,
    String auditSchema,
    Duration auditRetention) {

  /** Who the application names as the request's user (remote-without-token mode), or null. */
  public String actorOf(HttpServletRequest request) {
    return actor.apply(request);
  }
}
