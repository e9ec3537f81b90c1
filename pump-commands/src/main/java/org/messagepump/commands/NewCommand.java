package org.messagepump.commands;

import java.util.Arrays;
import java.util.Objects;
import org.messagepump.core.spi.Inputs;

/**
 * One command to enqueue in a batch: a typed command (encoded by the queue's codec) or a raw one
 * (type name plus payload bytes), each with its {@link EnqueueOptions}.
 */
public sealed interface NewCommand {

  /** The options of this command. */
  EnqueueOptions options();

  /** A typed command with default options. */
  static NewCommand of(Object command) {
    return new Typed(command, EnqueueOptions.defaults());
  }

  /** A typed command with options. */
  static NewCommand of(Object command, EnqueueOptions options) {
    return new Typed(command, options);
  }

  /** A raw command with default options. */
  static NewCommand raw(String type, byte[] payload) {
    return new Raw(type, payload, EnqueueOptions.defaults());
  }

  /** A raw command with options. */
  static NewCommand raw(String type, byte[] payload, EnqueueOptions options) {
    return new Raw(type, payload, options);
  }

  /** A command object the codec encodes; its class must be registered with the codec. */
  record Typed(Object command, EnqueueOptions options) implements NewCommand {
    /** Rejects a null command or options. */
    public Typed {
      if (command == null) {
        throw new IllegalArgumentException("command must not be null");
      }
      if (options == null) {
        throw new IllegalArgumentException("options must not be null");
      }
    }
  }

  /** A command already encoded: a type name and the payload bytes, stored as they are. */
  record Raw(String type, byte[] payload, EnqueueOptions options) implements NewCommand {
    /** Rejects a blank type, a null payload or null options. */
    public Raw {
      if (type == null || type.isBlank()) {
        throw new IllegalArgumentException("type must not be blank");
      }
      if (type.length() > CommandQueue.MAX_TYPE_LENGTH) {
        throw new IllegalArgumentException(
            "type must be at most "
                + CommandQueue.MAX_TYPE_LENGTH
                + " characters: "
                + type.length());
      }
      Inputs.key("type", type);
      if (payload == null) {
        throw new IllegalArgumentException(
            "payload of raw command '" + type + "' must not be null");
      }
      if (options == null) {
        throw new IllegalArgumentException("options must not be null");
      }
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Raw r
          && type.equals(r.type)
          && Arrays.equals(payload, r.payload)
          && options.equals(r.options);
    }

    @Override
    public int hashCode() {
      return Objects.hash(type, options) * 31 + Arrays.hashCode(payload);
    }

    @Override
    public String toString() {
      return "Raw[type="
          + type
          + ", payload="
          + payload.length
          + " bytes, options="
          + options
          + "]";
    }
  }
}
