/**
 * Resilience4j around a pump's driver: circuit breakers (per pump or per message type) that stop
 * acquisition while open, rate limiters and bulkheads per message type, all turning a refusal into
 * a Busy outcome with a retry-after. See {@link org.messagepump.resilience4j.ResilientDriver}.
 */
package org.messagepump.resilience4j;
