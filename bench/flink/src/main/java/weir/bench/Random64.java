// SPDX-License-Identifier: Apache-2.0
package weir.bench;

/** The bit-exact Java port of weir/expr/random.hpp: splitmix64's finalizer and the stateless
 * (seed, seq, salt) hash behind rand_int, rand_float and the Nexmark generator. */
public final class Random64 {
  public static final long SEQ_MULTIPLIER = 0x9E3779B97F4A7C15L;
  public static final long SALT_MULTIPLIER = 0xC2B2AE3D27D4EB4FL;

  private Random64() {}

  /** splitmix64's finalizer (Stafford's Mix13). */
  public static long mix64(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  public static long mixedSeed(long seed) {
    return mix64(seed);
  }

  /** mix64(mseed ^ seq * SEQ_MULTIPLIER ^ salt * SALT_MULTIPLIER). */
  public static long randomWord(long mseed, long seq, long salt) {
    return mix64(mseed ^ (seq * SEQ_MULTIPLIER) ^ (salt * SALT_MULTIPLIER));
  }

  /** The high 64 bits of the unsigned 128-bit product a * b. */
  public static long mulHigh(long a, long b) {
    return Math.multiplyHigh(a, b) + ((a >> 63) & b) + ((b >> 63) & a);
  }

  /** Uniform in [lo, hi], both inclusive: lo + mulHigh(word, hi - lo + 1). */
  public static long randomInt(long word, long lo, long hi) {
    long span = hi - lo + 1;
    long r = span == 0 ? word : mulHigh(word, span);
    return lo + r;
  }

  /** Uniform in [0, 1) with 53 bits. */
  public static double randomUnit(long word) {
    return (word >>> 11) * 0x1.0p-53;
  }
}
