package org.messagepump.eventstream;

/**
 * One handler's figures over the streams it has to catch up on, as operators see them: read by
 * {@link EventOperations#lagSummaries()} from the rows that may lag, not from every checkpoint.
 *
 * @param handlerKey the handler
 * @param laggingStreams streams with events at or after the handler's checkpoint
 * @param parkedStreams streams parked for the handler
 * @param lag events at or after the handler's checkpoints, over every stream
 * @param failures consecutive failures, summed over the handler's streams
 */
public record HandlerLag(
    String handlerKey, long laggingStreams, long parkedStreams, long lag, long failures) {}
