/** Resilience4j circuit breakers, rate limiters and bulkheads that gate a pump's acquisition. */
module org.messagepump.resilience4j {
  requires transitive org.messagepump.core;
  requires transitive java.sql;
  requires transitive io.github.resilience4j.core;
  requires transitive io.github.resilience4j.circuitbreaker;
  requires transitive io.github.resilience4j.ratelimiter;
  requires transitive io.github.resilience4j.bulkhead;
  requires static io.github.resilience4j.micrometer;
  requires static micrometer.core;

  exports org.messagepump.resilience4j;
}
