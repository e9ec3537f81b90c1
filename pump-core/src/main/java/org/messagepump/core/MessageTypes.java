package org.messagepump.core;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * An immutable registry mapping Java classes to stable type names (the names are what is stored, so
 * classes can be renamed or moved without breaking stored messages).
 *
 * <pre>{@code
 * MessageTypes types = MessageTypes.builder()
 *     .register(PlaceOrder.class, "orders.PlaceOrder")
 *     .build();
 * }</pre>
 */
public final class MessageTypes {

  /** Longest allowed type name. */
  public static final int MAX_NAME_LENGTH = 200;

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.:$/-]+");

  private final Map<Class<?>, String> names;
  private final Map<String, Class<?>> classes;

  private MessageTypes(Map<Class<?>, String> names, Map<String, Class<?>> classes) {
    this.names = Collections.unmodifiableMap(names);
    this.classes = Collections.unmodifiableMap(classes);
  }

  /** A new builder. */
  public static Builder builder() {
    return new Builder();
  }

  /** The type name of a class. */
  public String nameOf(Class<?> type) {
    Objects.requireNonNull(type, "message class");
    String name = names.get(type);
    if (name == null) {
      throw new UnknownMessageTypeException(
          "message class "
              + type.getName()
              + " is not registered; registered: "
              + classes.keySet());
    }
    return name;
  }

  /** The class of a type name. */
  public Class<?> classOf(String name) {
    Class<?> c = classes.get(name);
    if (c == null) {
      throw new UnknownMessageTypeException(
          "message type '" + name + "' is not registered; registered: " + classes.keySet());
    }
    return c;
  }

  /** True when the class is registered. */
  public boolean contains(Class<?> type) {
    return names.containsKey(type);
  }

  /** Every registered type name, in registration order. */
  public java.util.Set<String> names() {
    return classes.keySet();
  }

  /** Builds a {@link MessageTypes}; each class and each name may be registered once. */
  public static final class Builder {
    private final Map<Class<?>, String> names = new LinkedHashMap<>();
    private final Map<String, Class<?>> classes = new LinkedHashMap<>();

    private Builder() {}

    /** Registers a class under a stable name. */
    public Builder register(Class<?> type, String name) {
      Objects.requireNonNull(type, "message class");
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("type name of " + type.getName() + " must not be blank");
      }
      if (name.length() > MAX_NAME_LENGTH || !NAME.matcher(name).matches()) {
        throw new IllegalArgumentException(
            "type name '"
                + name
                + "' must be at most "
                + MAX_NAME_LENGTH
                + " characters of letters, digits and _.:$/-");
      }
      if (names.containsKey(type)) {
        throw new IllegalArgumentException(
            "message class " + type.getName() + " is already registered as " + names.get(type));
      }
      if (classes.containsKey(name)) {
        throw new IllegalArgumentException(
            "type name '" + name + "' is already registered for " + classes.get(name).getName());
      }
      names.put(type, name);
      classes.put(name, type);
      return this;
    }

    /** Registers a class under its simple name. */
    public Builder register(Class<?> type) {
      return register(type, Objects.requireNonNull(type, "message class").getSimpleName());
    }

    /** The immutable registry. */
    public MessageTypes build() {
      return new MessageTypes(new LinkedHashMap<>(names), new LinkedHashMap<>(classes));
    }
  }
}
