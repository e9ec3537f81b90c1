package org.messagepump.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.File;
import java.nio.charset.StandardCharsets;
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
import org.messagepump.eventstream.Checkpoint;
import org.messagepump.testkit.PostgresExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real browser (Debian's headless Chromium through Selenium): an operator sees
 * the failures, then retries, discards, resumes, moves and resets checkpoints and unparks a hostile
 * key (markup, a newline, 300 characters), opens a parked command's detail and a bulk action's
 * preview, pauses and resumes a type, a handler and a group with a hostile reason, each through its
 * confirmation, and finds every action in the audit log. Takes the screenshots of docs/console.md, into {@code console.screenshots}
 * (default {@code target/screenshots}). Runs in {@code -Pbrowser}.
 */
@Tag("browser")
@ExtendWith(PostgresExtension.class)
class ConsoleBrowserIT {

  static final String HOSTILE_KEY =
      ConsoleFixture.FAILING_PREFIX + "<script>alert(1)</script>\n\"'" + "x".repeat(300);

  static ConsoleFixture fixture;
  static ConsoleServer server;
  static WebDriver browser;
  static Path userData;

  @BeforeAll
  static void start(DataSource ds) throws Exception {
    fixture = new ConsoleFixture(ds).start(40);
    fixture.mail.storeMessage(HOSTILE_KEY, "<img src=x onerror=alert(2)>".getBytes(StandardCharsets.UTF_8));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                fixture.mail.operations().parkedKeys(fixture.mail.group()).containsKey(HOSTILE_KEY));
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

  /** Clicks a button, accepts its confirmation and returns the flash of the next page. */
  private static String confirmAndWait(WebElement button) {
    WebElement page = browser.findElement(By.tagName("html"));
    button.click();
    waiting().until(ExpectedConditions.alertIsPresent()).accept();
    return flashAfter(page);
  }

  /** Submits a form whose confirmation is typed, and returns the flash of the next page. */
  private static String submitAndWait(WebElement form) {
    WebElement page = browser.findElement(By.tagName("html"));
    form.findElement(By.tagName("button")).click();
    return flashAfter(page);
  }

  /** The flash message of the page that replaces {@code page} (not a flash still on it). */
  private static String flashAfter(WebElement page) {
    waiting().until(d -> replaced(page));
    return waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("flash"))).getText();
  }

  /**
   * Whether {@code element}'s document has been replaced by the next page. While Chromium swaps
   * the documents, chromedriver may answer a command on the old element with "Node with given id
   * does not belong to the document" (an unknown error) instead of a stale element reference
   * ({@code ExpectedConditions.stalenessOf} then fails the wait): both say the element is gone.
   */
  private static boolean replaced(WebElement element) {
    try {
      element.isEnabled();
      return false;
    } catch (StaleElementReferenceException e) {
      return true;
    } catch (WebDriverException e) {
      if (String.valueOf(e.getMessage()).contains("does not belong to the document")) {
        return true;
      }
      throw e;
    }
  }

  /** The number of points a sparkline has drawn; 0 before its first sample arrives. */
  private static int points(WebDriver d, String series) {
    String n =
        d.findElement(By.cssSelector("svg[data-series='" + series + "']"))
            .getAttribute("data-points");
    return n == null || n.isEmpty() ? 0 : Integer.parseInt(n);
  }

  private static Checkpoint checkpoint(long stream) {
    return fixture.events.operations().checkpoints(ConsoleFixture.LEDGER).stream()
        .filter(c -> c.streamId() == stream)
        .findFirst()
        .orElseThrow();
  }

  @Test
  void anOperatorRunsEveryActionThroughThePages() throws Exception {
    // Overview: the live charts fill from the polled samples.
    open("");
    waiting().until(d -> points(d, "pump.charges.handled") >= 5);
    assertThat(browser.findElement(By.tagName("body")).getText())
        .contains("Commands", "Event handlers", "Balancer groups", "Pumps", ConsoleFixture.LEDGER);
    screenshot("overview");

    long stream = fixture.poisonedStream();
    open("events?handler=" + ConsoleFixture.LEDGER);
    assertThat(browser.findElement(By.id("stream-" + stream)).getText())
        .contains("ledger rejects stream");
    screenshot("events");

    open("balancer?group=" + ConsoleFixture.MAIL);
    String parked = browser.findElement(By.id("parked-keys")).getText();
    assertThat(parked).contains(ConsoleFixture.BAD_KEY, "<script>alert(1)</script>");
    // The 300-character key wraps: nothing stretches the page sideways.
    Object overflow =
        ((JavascriptExecutor) browser)
            .executeScript(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;");
    assertThat(((Number) overflow).longValue()).isLessThanOrEqualTo(0);
    screenshot("balancer");

    open("commands");
    assertThat(browser.findElement(By.id("dead-letters")).getText())
        .contains("card declined", ConsoleFixture.CHARGE);
    UUID id = fixture.queue.operations().deadLetters().list(1).get(0).messageId();
    WebElement row = browser.findElement(By.id("dl-" + id));
    assertThat(row.getText()).contains("2", "hidden"); // attempts, payload hidden
    screenshot("commands");

    // Cancelling the confirmation does nothing.
    row.findElement(By.xpath(".//button[text()='Retry']")).click();
    waiting().until(ExpectedConditions.alertIsPresent()).dismiss();
    assertThat(browser.findElements(By.id("dl-" + id))).hasSize(1);
    assertThat(fixture.queue.operations().deadLetters().find(id)).isPresent();

    // Every failure cures from now on, and no new work arrives (a checkpoint is moved below):
    // retry, and watch the command be handled.
    fixture.stopTraffic();
    fixture.heal();
    int handled = fixture.handledCharges.get();
    String retried =
        confirmAndWait(
            browser
                .findElement(By.id("dl-" + id))
                .findElement(By.xpath(".//button[text()='Retry']")));
    assertThat(retried).contains("retried 1");
    assertThat(browser.findElements(By.id("dl-" + id))).isEmpty();
    waiting()
        .until(
            d ->
                d.findElements(By.cssSelector("#retried-" + id + "[data-state='done']")).size()
                    == 1);
    assertThat(fixture.handledCharges.get()).isGreaterThan(handled);
    screenshot("commands-retried");

    // Discard the selected ones.
    open("commands");
    UUID other = fixture.queue.operations().deadLetters().list(1).get(0).messageId();
    browser.findElement(By.cssSelector("input[form=bulk][value='" + other + "']")).click();
    assertThat(confirmAndWait(browser.findElement(By.id("bulk-discard")))).contains("discarded 1");
    assertThat(fixture.queue.operations().deadLetters().find(other)).isEmpty();

    // Resume the parked stream, then move its checkpoint back one and reset the handler.
    open("events?handler=" + ConsoleFixture.LEDGER);
    assertThat(
            confirmAndWait(
                browser
                    .findElement(By.id("stream-" + stream))
                    .findElement(By.xpath(".//button[text()='Resume']"))))
        .contains("resumed 1");
    // No charge left to append events: the checkpoint stays where it is read.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                fixture.queue.operations().depth().due() + fixture.queue.operations().depth().delayed() == 0
                    && checkpoint(stream).lag() == 0
                    && !checkpoint(stream).parked());
    long end = checkpoint(stream).offset();
    WebElement set =
        browser.findElement(By.cssSelector("form[action$='/actions/checkpoints/set']"));
    set.findElement(By.name("stream")).sendKeys(String.valueOf(stream));
    set.findElement(By.name("expected")).sendKeys(String.valueOf(end));
    set.findElement(By.name("offset")).sendKeys(String.valueOf(end - 1));
    set.findElement(By.name("confirm")).sendKeys(ConsoleFixture.LEDGER);
    assertThat(submitAndWait(set)).contains("moved from " + end + " to " + (end - 1));
    WebElement reset =
        browser.findElement(By.cssSelector("form[action$='/actions/checkpoints/reset']"));
    reset.findElement(By.name("confirm")).sendKeys(ConsoleFixture.LEDGER);
    assertThat(submitAndWait(reset)).contains("reset all");

    // Unpark the hostile key: its markup stays text, its message is delivered.
    open("balancer?group=" + ConsoleFixture.MAIL);
    WebElement hostile =
        browser.findElements(By.cssSelector("#parked-keys tr")).stream()
            .filter(tr -> tr.getText().contains("<script>alert(1)</script>"))
            .findFirst()
            .orElseThrow();
    assertThat(confirmAndWait(hostile.findElement(By.xpath(".//button[text()='Unpark']"))))
        .contains("unparked");
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                fixture
                    .mail
                    .operations()
                    .partitionStats(fixture.mail.group(), HOSTILE_KEY)
                    .isEmpty());

    // The job view: a parked command's detail, what a bulk action will touch, and pauses of a
    // type, a handler and a group, each paused with a hostile reason and resumed.
    open("jobs?driver=commands&state=parked");
    screenshot("jobs");
    WebElement firstParked = browser.findElement(By.cssSelector("#jobs tbody tr td.id a"));
    String parkedId = firstParked.getText();
    firstParked.click();
    waiting()
        .until(
            ExpectedConditions.textToBePresentInElementLocated(
                By.id("command"), "card declined"));
    assertThat(browser.findElement(By.id("command")).getText()).contains(parkedId, "parked");
    open("jobs/preview?action=retry&type=" + ConsoleFixture.CHARGE);
    assertThat(browser.findElement(By.id("preview-ids")).getText()).contains(parkedId);
    screenshot("jobs-preview");
    for (String driver : new String[] {"commands", "events", "balancer"}) {
      open("jobs?driver=" + driver);
      WebElement pause = browser.findElement(By.cssSelector("#pause-form form"));
      pause.findElement(By.name("reason")).sendKeys("deploy <b>" + driver + "</b> & \"'");
      String flash = confirmAndWait(pause.findElement(By.tagName("button")));
      assertThat(flash).contains("paused: deploy <b>" + driver + "</b> & \"'");
      assertThat(browser.findElement(By.id("paused")).getText()).contains("deploy <b>" + driver);
      if (driver.equals("balancer")) {
        screenshot("jobs-paused");
      }
      assertThat(
              confirmAndWait(
                  browser
                      .findElement(By.id("paused"))
                      .findElement(By.xpath(".//button[text()='Resume']"))))
          .contains("resumed");
      assertThat(browser.findElement(By.id("paused")).getText()).contains("Nothing paused.");
    }
    assertThat(fixture.queue.operations().pausedTypes()).isEmpty();
    assertThat(fixture.events.operations().pausedHandlers()).isEmpty();
    assertThat(fixture.mail.operations().isPaused(fixture.mail.group())).isFalse();

    open("audit");
    assertThat(browser.findElement(By.id("audit")).getText())
        .contains(
            "browser-test",
            "dead-letters.retry",
            id.toString(),
            "dead-letters.discard",
            other.toString(),
            "streams.resume",
            "checkpoints.set",
            "checkpoints.reset",
            "keys.unpark",
            "pauses.pause",
            "pauses.resume",
            "<script>alert(1)</script>");
    screenshot("audit");
  }
}
