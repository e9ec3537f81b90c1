package org.messagepump.eventstream;

import java.util.List;

/**
 * Where an append put its events: the stream, the offset of the first event and the stream's next
 * offset after the append (the events hold {@code firstOffset .. nextOffset - 1}).
 *
 * @param streamId the stream the events were appended to
 * @param firstOffset the offset of the first appended event
 * @param nextOffset the stream's next offset after the append
 * @param messageIds the message ids given to the events, in order
 */
public record AppendResult(
    long streamId, long firstOffset, long nextOffset, List<String> messageIds) {

  public AppendResult {
    messageIds = List.copyOf(messageIds);
  }
}
