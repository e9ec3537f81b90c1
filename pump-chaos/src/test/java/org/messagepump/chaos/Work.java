package org.messagepump.chaos;

import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;

/** The chaos suite's message: a number (the rules of failing handlers key on it). */
public record Work(long n) {

  /** The stable type name. */
  public static final String TYPE = "chaos.Work";

  /** The codec of the suite's messages. */
  public static final JsonMessageCodec CODEC =
      JsonMessageCodec.of(MessageTypes.builder().register(Work.class, TYPE).build());
}
