package org.messagepump.cli;

import org.messagepump.core.PumpException;

/**
 * A failure the CLI reports as one line with an exit code (the stack trace only with --verbose).
 */
final class CliException extends PumpException {

  private final int exitCode;

  CliException(String message, int exitCode) {
    super(message);
    this.exitCode = exitCode;
  }

  CliException(String message, int exitCode, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  int exitCode() {
    return exitCode;
  }
}
