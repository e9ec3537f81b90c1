/**
 * OpenTelemetry for pumps, on {@code opentelemetry-api} only: the W3C trace context of the producer
 * carried in message headers, and one consumer span per delivery. See {@link
 * org.messagepump.opentelemetry.PumpTracing}.
 */
package org.messagepump.opentelemetry;
