package org.messagepump.console.internal;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * HMAC-SHA256 under the console's secret (configured, or random per process): what makes a CSRF
 * token or a login cookie one the server issued. Checks compare in constant time.
 */
final class Signer {

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final HexFormat HEX = HexFormat.of();

  private final SecretKeySpec key;

  /** A signer under {@code secret}; null: 32 random bytes, so this process's signatures only. */
  Signer(byte[] secret) {
    byte[] k = secret;
    if (k == null) {
      k = new byte[32];
      RANDOM.nextBytes(k);
    }
    this.key = new SecretKeySpec(k, "HmacSHA256");
  }

  /** The hex HMAC of the parts, each preceded by its length (so no two part lists collide). */
  String sign(String... parts) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(key);
      for (String p : parts) {
        byte[] b = p.getBytes(StandardCharsets.UTF_8);
        mac.update(
            new byte[] {
              (byte) (b.length >>> 24),
              (byte) (b.length >>> 16),
              (byte) (b.length >>> 8),
              (byte) b.length
            });
        mac.update(b);
      }
      return HEX.formatHex(mac.doFinal());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }

  /** True when {@code signature} is the HMAC of the parts; constant time in the signature. */
  boolean verify(String signature, String... parts) {
    return signature != null && equal(sign(parts), signature);
  }

  /** Random bytes as hex: session ids and nonces. */
  static String random(int bytes) {
    byte[] b = new byte[bytes];
    RANDOM.nextBytes(b);
    return HEX.formatHex(b);
  }

  /** Constant-time equality of two strings (of any lengths: their SHA-256 digests are compared). */
  static boolean equal(String a, String b) {
    return MessageDigest.isEqual(sha256(a), sha256(b));
  }

  static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
