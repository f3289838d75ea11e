// SPDX-License-Identifier: Apache-2.0
package weir.bench;

import java.nio.charset.StandardCharsets;

/** The Java port of weir::row_hasher (src/kinds/sinks/blackhole/include/weir/blackhole/sink.hpp): the hash of
 * one result row; a result's digest is the sum of its rows' hashes, mod 2^64. */
public final class RowHasher {
  private long state = 0x243F6A8885A308D3L;

  public RowHasher add(long x) {
    state = Random64.mix64(state ^ x);
    return this;
  }

  public RowHasher addDouble(double x) {
    return add(Double.doubleToRawLongBits(x));
  }

  public RowHasher addString(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    add(b.length);
    int i = 0;
    for (; i + 8 <= b.length; i += 8) {
      add(littleEndian(b, i, 8));
    }
    if (i < b.length) {
      add(littleEndian(b, i, b.length - i));
    }
    return this;
  }

  public long finish() {
    return Random64.mix64(state);
  }

  private static long littleEndian(byte[] b, int from, int n) {
    long w = 0;
    for (int j = 0; j < n; ++j) {
      w |= (b[from + j] & 0xFFL) << (8 * j);
    }
    return w;
  }
}
