package org.messagepump.commands;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.messagepump.core.JsonMessageCodec;
import org.messagepump.core.MessageTypes;
import org.messagepump.testkit.PostgresExtension;
import org.messagepump.testkit.TestDatabase;

/** Dead letters a page at a time: every one once, in the order of the whole list. */
@ExtendWith(PostgresExtension.class)
class DeadLetterPagesIT {

  @BeforeAll
  static void migrate(DataSource ds) {
    CommandOperations.of(ds).migrate();
  }

  private static List<DeadLetter> walk(DeadLetters letters, String type, int limit) {
    List<DeadLetter> all = new ArrayList<>();
    DeadLetter after = null;
    while (true) {
      List<DeadLetter> page =
          after == null
              ? letters.list(type, null, null, limit)
              : letters.list(type, after.parkedAt(), after.messageId(), limit);
      all.addAll(page);
      if (page.size() < limit) {
        return all;
      }
      after = page.get(page.size() - 1);
    }
  }

  @Test
  void pagesWalkEveryDeadLetterOnceInListOrder(TestDatabase db) {
    // 25 dead letters of two types, parked at 4 moments: ties broken by message id.
    db.execute(
        "INSERT INTO commandqueue.dead_letters (message_id, message_type, payload, failures,"
            + " last_error, enqueued_at, parked_at) SELECT gen_random_uuid(),"
            + " CASE WHEN i % 2 = 0 THEN 'pages.Even' ELSE 'pages.Odd' END, '\\x7b7d'::bytea, 1,"
            + " 'failed ' || i, now(), timestamptz '2026-01-01 00:00:00.000001'"
            + " + (i % 4) * interval '1 minute' FROM generate_series(1, 25) AS i");
    DeadLetters letters =
        CommandQueue.builder(db.dataSource())
            .codec(JsonMessageCodec.of(MessageTypes.builder().build()))
            .build()
            .operations()
            .deadLetters();
    for (String type : new String[] {null, "pages.Even", "pages.Odd"}) {
      List<DeadLetter> whole = letters.list(type, DeadLetters.MAX_LIST_LIMIT);
      assertThat(walk(letters, type, 4))
          .extracting(DeadLetter::messageId)
          .containsExactlyElementsOf(whole.stream().map(DeadLetter::messageId).toList());
      assertThat(walk(letters, type, 1)).hasSameSizeAs(whole);
    }
    assertThat(letters.list(null, DeadLetters.MAX_LIST_LIMIT)).hasSize(25);
  }

  @Test
  void badInputIsRefused(TestDatabase db) {
    DeadLetters letters =
        CommandQueue.builder(db.dataSource())
            .codec(JsonMessageCodec.of(MessageTypes.builder().build()))
            .build()
            .operations()
            .deadLetters();
    java.time.Instant at = java.time.Instant.now();
    java.util.UUID id = java.util.UUID.randomUUID();
    assertThatThrownBy(() -> letters.list(null, null, null, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> letters.list(null, at, id, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> letters.list("bad\0type", at, id, 5))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> letters.list(null, at, null, 5))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> letters.list(null, null, id, 5))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(letters.list("pages.None", at, id, 5)).isEmpty();
  }
}
