package org.messagepump.commands.internal;

import java.util.UUID;
import org.messagepump.commands.EnqueueOptions;

/** A validated, encoded command ready to insert. */
public record EncodedCommand(UUID messageId, String type, byte[] payload, EnqueueOptions options) {}
