package org.messagepump.commands;

import java.util.UUID;

/** A validated, encoded command ready to insert. */
record EncodedCommand(UUID messageId, String type, byte[] payload, EnqueueOptions options) {}
