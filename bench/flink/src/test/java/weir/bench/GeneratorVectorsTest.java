// SPDX-License-Identifier: Apache-2.0
package weir.bench;

import static org.junit.Assert.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.Test;

/** The Java generators reproduce the C++ generators' first 1000 events exactly: the shared test
 * vectors in bench/vectors were written by weir_baseline (bench/run vectors ... --write), and
 * bench/run vectors ... --verify checks the C++ side against the same files. */
public class GeneratorVectorsTest {
  private static List<String> vectors(String name) throws IOException {
    Path dir = Paths.get(System.getProperty("weir.vectors", "../vectors"));
    return Files.readAllLines(dir.resolve(name), StandardCharsets.UTF_8);
  }

  @Test
  public void nexmarkEventsMatchTheCppGenerator() throws IOException {
    List<String> expected = vectors("nexmark-first-1000.txt");
    assertEquals(1000, expected.size());
    NexmarkGenerator gen = new NexmarkGenerator(0);
    for (int n = 0; n < expected.size(); ++n) {
      assertEquals("event " + n, expected.get(n), gen.describe(n));
    }
  }

  @Test
  public void ysbEventsMatchTheCppGenerator() throws IOException {
    List<String> expected = vectors("ysb-first-1000.txt");
    assertEquals(1000, expected.size());
    long mseed = Random64.mixedSeed(0);
    for (int n = 0; n < expected.size(); ++n) {
      assertEquals("event " + n, expected.get(n), YsbEvent.make(mseed, n).describe(n));
    }
  }

  @Test
  public void randomWordsAndRowHashesMatchPinnedCppValues() {
    // The same figures are pinned in tests/unit/expr/random_functions_test.cpp and
    // tests/unit/connectors/blackhole_sink_test.cpp.
    long w = Random64.randomWord(Random64.mixedSeed(42), 5, 3);
    assertEquals(2703782799149312835L, w);
    assertEquals(146L, Random64.randomInt(w, 0, 999));
    long h = new RowHasher().add(7).addDouble(2.5).addString("nexmark rows").add(-1).finish();
    assertEquals(ROW_HASH, h);
  }

  static final long ROW_HASH = 0x49f14292fc677e54L;
}
