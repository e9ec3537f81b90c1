package org.messagepump.eventstream.internal;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.messagepump.core.Envelope;
import org.messagepump.core.UndecodableMessageException;
import org.messagepump.eventstream.StoredEvent;
import org.messagepump.eventstream.internal.Tables.Events;

/** Maps rows of {@code eventstream.events} to {@link StoredEvent}. */
public final class EventRows {

  /** The columns every event read selects. */
  public static final List<Field<?>> COLUMNS =
      List.of(
          Events.MESSAGE_ID,
          Events.STREAM_ID,
          Events.OFFSET,
          Events.TYPE,
          Events.CORRELATION_ID,
          Events.CAUSATION_ID,
          Events.HEADERS,
          Events.PAYLOAD,
          Events.RECORDED_AT);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<Map<String, String>> HEADERS = new TypeReference<>() {};

  private EventRows() {}

  /** The event in a row selected with {@link #COLUMNS}. */
  public static StoredEvent toEvent(Record r) {
    Envelope envelope =
        new Envelope(
            r.get(Events.MESSAGE_ID).toString(),
            r.get(Events.TYPE),
            r.get(Events.CORRELATION_ID),
            r.get(Events.CAUSATION_ID),
            instant(r.get(Events.RECORDED_AT)),
            headers(r.get(Events.HEADERS)),
            r.get(Events.PAYLOAD));
    return new StoredEvent(r.get(Events.STREAM_ID), r.get(Events.OFFSET), envelope);
  }

  private static Map<String, String> headers(JSONB json) {
    if (json == null) {
      return Map.of();
    }
    try {
      Map<String, String> m = JSON.readValue(json.data(), HEADERS);
      return m == null ? Map.of() : m;
    } catch (IOException e) {
      throw new UndecodableMessageException("event headers are not a JSON object of strings", e);
    }
  }

  static Instant instant(OffsetDateTime t) {
    return t == null ? null : t.toInstant();
  }
}
