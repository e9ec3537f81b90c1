package org.messagepump.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering the module list promises, checked on the compiled classes of every module:
 *
 * <ul>
 *   <li>drivers use only pump-core's shared vocabulary ({@code org.messagepump.core}) and its SPI
 *       ({@code org.messagepump.core.spi}), never the engine, and not one another;
 *   <li>pump-core's three packages are layered one way: engine, then SPI, then the vocabulary;
 *   <li>pump-core depends on no driver;
 *   <li>the Jackson 3 codec uses only pump-core's public API and SPI, and only it uses Jackson 3;
 *   <li>nothing depends on pump-cli;
 *   <li>an {@code internal} package is used only inside its own module;
 *   <li>no package cycles, without exemptions.
 * </ul>
 */
class ArchitectureTest {

  private static JavaClasses classes;

  @BeforeAll
  static void importClasses() {
    classes =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("org.messagepump");
  }

  @Test
  void driversUseOnlyTheCoreApiAndSpi() {
    noClasses()
        .that()
        .resideInAnyPackage(
            "org.messagepump.commands..",
            "org.messagepump.eventstream..",
            "org.messagepump.balancer..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("org.messagepump.core.(*)..")
        .andShould()
        .dependOnClassesThat()
        .resideOutsideOfPackages(
            "org.messagepump.core",
            "org.messagepump.core.spi",
            "org.messagepump.commands..",
            "org.messagepump.eventstream..",
            "org.messagepump.balancer..",
            "java..",
            "javax..",
            "org.jooq..",
            "org.flywaydb..",
            "org.postgresql..",
            "org.slf4j..",
            "io.micrometer..",
            "com.fasterxml.jackson..",
            "com.cronutils..")
        .check(classes);
  }

  @Test
  void driversDoNotDependOnOneAnother() {
    String[][] pairs = {
      {"org.messagepump.commands..", "org.messagepump.eventstream..", "org.messagepump.balancer.."},
      {"org.messagepump.eventstream..", "org.messagepump.commands..", "org.messagepump.balancer.."},
      {"org.messagepump.balancer..", "org.messagepump.commands..", "org.messagepump.eventstream.."}
    };
    for (String[] p : pairs) {
      noClasses()
          .that()
          .resideInAPackage(p[0])
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(p[1], p[2])
          .check(classes);
    }
  }

  @Test
  void coreDependsOnNoDriverNorTheCli() {
    noClasses()
        .that()
        .resideInAPackage("org.messagepump.core..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "org.messagepump.commands..",
            "org.messagepump.eventstream..",
            "org.messagepump.balancer..",
            "org.messagepump.cli..",
            "org.messagepump.testkit..",
            "org.messagepump.jackson3..")
        .check(classes);
  }

  @Test
  void theJackson3CodecUsesOnlyTheCoreApiAndSpi() {
    noClasses()
        .that()
        .resideInAPackage("org.messagepump.jackson3..")
        .should()
        .dependOnClassesThat()
        .resideOutsideOfPackages(
            "org.messagepump.core",
            "org.messagepump.core.spi",
            "org.messagepump.jackson3..",
            "java..",
            "tools.jackson..")
        .check(classes);
    noClasses()
        .that()
        .resideOutsideOfPackages("org.messagepump.jackson3..", "org.messagepump.spring.boot..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("tools.jackson..")
        .check(classes);
  }

  /**
   * Micrometer's {@code micrometer-core} is an optional dependency: outside pump-cli, only the
   * classes loaded once an application hands over its {@code MeterRegistry} use it, and the
   * builders (and the console's config) name it in their {@code meterRegistry} methods. Any other
   * class would fail to load, or fail when run, in an application without Micrometer.
   */
  @Test
  void onlyTheMicrometerAdaptersAndTheBuildersNameMicrometer() {
    noClasses()
        .that()
        .resideOutsideOfPackage("org.messagepump.cli..")
        .and()
        .haveNameNotMatching(
            "org\\.messagepump\\.("
                + "core\\.spi\\.MicrometerMeters"
                + "|core\\.engine\\.MessagePump\\$Builder"
                + "|commands\\.CommandQueue\\$Builder"
                + "|eventstream\\.EventStore\\$Builder"
                + "|eventstream\\.EventDriver\\$Builder"
                + "|balancer\\.MessageBalancer\\$Builder"
                + "|console\\.ConsoleConfig(\\$Builder)?"
                + "|console\\.internal\\.MicrometerReadings"
                + "|resilience4j\\.ResilienceMeters"
                + "|resilience4j\\.ResilientDriver\\$Builder"
                + "|spring\\.boot\\.internal\\.MicrometerPumpMeterRegistry"
                + "|spring\\.boot\\.MessagePumpAutoConfiguration\\$MetersConfiguration"
                + ")(\\$[0-9]+)?")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.micrometer.core..")
        .check(classes);
  }

  @Test
  void nothingDependsOnTheCli() {
    noClasses()
        .that()
        .resideOutsideOfPackage("org.messagepump.cli..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("org.messagepump.cli..")
        .check(classes);
  }

  @Test
  void internalPackagesStayInsideTheirModule() {
    for (String module :
        new String[] {"commands", "eventstream", "balancer", "spring.boot", "resilience4j"}) {
      noClasses()
          .that()
          .resideOutsideOfPackage("org.messagepump." + module + "..")
          .should()
          .dependOnClassesThat()
          .resideInAPackage("org.messagepump." + module + ".internal..")
          .check(classes);
    }
  }

  /**
   * Core has three rooms, layered one way: {@code core} is the vocabulary every layer and the
   * application share (a leaf: {@code Tx}, {@code Envelope}, the exceptions, the codecs), {@code
   * core.spi} is the driver SPI with the driver author's kit, and {@code core.engine} is the pump
   * (its public face {@code MessagePump}, {@code PumpOptions}, {@code PumpTester}; the rest of the
   * engine is package-private there, so the compiler hides it even though pump-core is an automatic
   * module).
   */
  @Test
  void coreIsLayeredOneWay() {
    noClasses()
        .that()
        .resideInAPackage("org.messagepump.core")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("org.messagepump.core.spi..", "org.messagepump.core.engine..")
        .check(classes);
    noClasses()
        .that()
        .resideInAPackage("org.messagepump.core.spi")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("org.messagepump.core.engine..")
        .check(classes);
  }

  /** No package cycles, without exemptions. */
  @Test
  void noPackageCycles() {
    slices().matching("org.messagepump.(**)").should().beFreeOfCycles().check(classes);
  }
}
