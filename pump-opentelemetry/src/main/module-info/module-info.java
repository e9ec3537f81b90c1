/** OpenTelemetry trace context from producer to a consumer span per delivery. */
module org.messagepump.opentelemetry {
  requires transitive org.messagepump.core;
  requires transitive io.opentelemetry.api;
  requires transitive io.opentelemetry.context;

  exports org.messagepump.opentelemetry;
}
