package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.testkit.PostgresExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real browser (Debian's headless Chromium through Selenium): an operator sees a
 * dead-lettered command, clicks retry, confirms, and watches it disappear and be handled. Takes the
 * screenshots of docs/console.md. Runs in {@code -Pbrowser}.
 */
@Tag("browser")
@ExtendWith(PostgresExtension.class)
class ConsoleBrowserIT {

  static ConsoleFixture fixture;
  static ConsoleServer server;
  static WebDriver browser;
  static Path userData;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    fixture = new ConsoleFixture(ds).start(40);
    fixture.startTraffic();
    server =
        ConsoleServer.start(
            ds,
            ConsoleConfig.builder()
                .meterRegistry(fixture.registry)
                .actorName("browser-test")
                .build(),
            "127.0.0.1",
            0);
    userData = Files.createTempDirectory("console-chromium");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(executable("chromium"));
    options.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1400,1100",
        "--user-data-dir=" + userData);
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(new File(executable("chromedriver")))
            .build();
    browser = new ChromeDriver(service, options);
  }

  @AfterAll
  static void stop() throws Exception {
    if (browser != null) {
      browser.quit();
    }
    if (server != null) {
      server.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  private static String executable(String name) {
    for (String dir : new String[] {"/usr/bin", "/usr/local/bin", "/usr/lib/chromium"}) {
      File f = new File(dir, name);
      if (f.canExecute()) {
        return f.getPath();
      }
    }
    throw new IllegalStateException(
        name + " not found: run pump-console/scripts/install-chromium.sh (mvn -Pbrowser does)");
  }

  private static WebDriverWait waiting() {
    return new WebDriverWait(browser, Duration.ofSeconds(30));
  }

  private static void open(String path) {
    browser.get(server.uri().resolve(path).toString());
  }

  private static void screenshot(String name) throws Exception {
    File shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE);
    Path dir = Path.of(System.getProperty("console.screenshots", "target/screenshots"));
    Files.createDirectories(dir);
    Files.copy(shot.toPath(), dir.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
  }

  @Test
  void anOperatorRetriesADeadLetterAndWatchesItBeHandled() throws Exception {
    // Overview: the live charts fill from the polled samples.
    open("");
    waiting()
        .until(
            d ->
                Integer.parseInt(
                        d.findElement(By.cssSelector("svg[data-series='pump.charges.handled']"))
                            .getAttribute("data-points"))
                    >= 5);
    assertThat(browser.findElement(By.tagName("body")).getText())
        .contains("Commands", "Event handlers", "Balancer groups", "Pumps", ConsoleFixture.LEDGER);
    screenshot("overview");

    open("events?handler=" + ConsoleFixture.LEDGER);
    assertThat(browser.findElement(By.id("stream-" + fixture.poisonedStream())).getText())
        .contains("ledger rejects stream");
    screenshot("events");

    open("balancer?group=" + ConsoleFixture.MAIL);
    assertThat(browser.findElement(By.id("parked-keys")).getText())
        .contains(ConsoleFixture.BAD_KEY);
    screenshot("balancer");

    // Commands: the dead letters, their reason and attempts.
    open("commands");
    WebElement table = browser.findElement(By.id("dead-letters"));
    assertThat(table.getText()).contains("card declined", ConsoleFixture.CHARGE);
    UUID id = fixture.queue.deadLetters().list(1).get(0).messageId();
    WebElement row = browser.findElement(By.id("dl-" + id));
    assertThat(row.getText()).contains("2", "hidden"); // attempts, payload hidden
    screenshot("commands");

    // Cancelling the confirmation does nothing.
    row.findElement(By.xpath(".//button[text()='Retry']")).click();
    waiting().until(ExpectedConditions.alertIsPresent()).dismiss();
    assertThat(browser.findElements(By.id("dl-" + id))).hasSize(1);
    assertThat(fixture.queue.deadLetters().find(id)).isPresent();

    // The card is fixed: retry, confirm, watch it leave the dead letters and be handled.
    fixture.heal();
    int handled = fixture.handledCharges.get();
    browser
        .findElement(By.id("dl-" + id))
        .findElement(By.xpath(".//button[text()='Retry']"))
        .click();
    waiting().until(ExpectedConditions.alertIsPresent()).accept();
    waiting().until(d -> d.findElements(By.id("dl-" + id)).isEmpty());
    assertThat(browser.findElement(By.id("flash")).getText()).contains("retried 1");
    waiting()
        .until(
            d ->
                d.findElements(By.cssSelector("#retried-" + id + "[data-state='done']")).size()
                    == 1);
    assertThat(fixture.handledCharges.get()).isGreaterThan(handled);
    assertThat(fixture.queue.deadLetters().find(id)).isEmpty();
    screenshot("commands-retried");

    open("audit");
    assertThat(browser.findElement(By.id("audit")).getText())
        .contains("browser-test", "dead-letters.retry", id.toString());
    screenshot("audit");
  }
}
