package org.messagepump.console.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class AuditLineTest {

  @Test
  void aNewlineInAKeyCannotForgeASecondLine() {
    String key = "k\nconsole audit: id=1 actor=\"root\" action=\"keys.unpark\"\r\u2028x\u0000";
    Audit.Entry e =
        new Audit.Entry(
            7,
            Instant.EPOCH,
            "alice\n",
            "127.0.0.1",
            "keys.unpark",
            List.of("mail key " + key),
            "unparked");
    String line = Audit.line(e);
    assertThat(line)
        .doesNotContain("\n", "\r", "\u2028", "\u0000")
        .startsWith("console audit: id=7 actor=\"alice\\n\" from=\"127.0.0.1\"")
        .contains(
            "\"mail key k\\nconsole audit: id=1 actor=\\\"root\\\" action=\\\"keys.unpark\\\"")
        .contains("\\r\\u2028x\\u0000\"]")
        .endsWith(" result=\"unparked\"");
    // At the start, and inside the quoted key only.
    assertThat(line.split("console audit:", -1)).hasSize(3);
  }

  @Test
  void aBackslashCannotCloseAQuote() {
    assertThat(AuditLine.quote("a\\\" result=\"forged"))
        .isEqualTo("\"a\\\\\\\" result=\\\"forged\"");
  }

  @Test
  void aBulkLineNamesTheFirstThousandTargetsAndPointsToTheRow() {
    List<String> ids = Collections.nCopies(1_005, "x");
    String line =
        Audit.line(new Audit.Entry(9, Instant.EPOCH, "a", "b", "dead-letters.retry", ids, "r"));
    assertThat(line).contains("(and 5 more in row 9)");
  }

  @Test
  void refusedRequestsAreLoggedAtMostOnceAMinute() {
    AtomicLong now = new AtomicLong(1_000_000);
    Refusals refusals = new Refusals(org.messagepump.core.spi.Meters.none(), now::get);
    Refused e = new Refused(403, "missing or wrong CSRF token");
    int lines = 0;
    for (int i = 0; i < 505; i++) {
      lines += refusals.refused("127.0.0.1", "POST", "/actions/x", e) ? 1 : 0;
      now.addAndGet(10); // 505 in about five seconds
    }
    assertThat(lines).isEqualTo(1);
    assertThat(refusals.total()).isEqualTo(505);
    now.addAndGet(Refusals.LOG_INTERVAL_MS);
    assertThat(refusals.refused("127.0.0.1", "POST", "/actions/x", e)).isTrue();
  }
}
