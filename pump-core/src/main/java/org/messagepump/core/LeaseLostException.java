package org.messagepump.core;

/**
 * A lease-mode delivery's completion, postponement or parking was refused because its lease is no
 * longer this claim's: it expired (the holder was paused, partitioned or presumed dead) and another
 * claim took the delivery, with a newer fencing token. Nothing was changed; the delivery belongs to
 * the newer claim. The pump counts it ({@code messagepump.leases.lost}) and logs it once.
 */
public class LeaseLostException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** A refusal with its message (which names the delivery and the stale token). */
  public LeaseLostException(String message) {
    super(message);
  }
}
