package org.messagepump.spring.boot.internal;

import java.util.List;

/**
 * What the startup migrations did (the modules migrated; empty with {@code migrate=none}). The
 * beans that use the library's tables depend on it, so they exist only after the migrations ran.
 */
public record MigratedSchemas(List<String> modules) {

  /** Copies the list. */
  public MigratedSchemas {
    modules = List.copyOf(modules);
  }
}
