/** A message codec on Jackson 3. */
module org.messagepump.jackson3 {
  requires transitive org.messagepump.core;
  requires transitive tools.jackson.databind;

  exports org.messagepump.jackson3;
}
