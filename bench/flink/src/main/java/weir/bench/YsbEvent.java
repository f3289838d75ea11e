// SPDX-License-Identifier: Apache-2.0
package weir.bench;

/** A Yahoo Streaming Benchmark ad event with integer fields: the port of bench/ysb/ysb.toml's
 * generator fields (and of bench/baseline's make_ysb_event). */
public class YsbEvent {
  public long userId;
  public long pageId;
  public long adId;
  public long adType;
  public long eventType;
  public long eventTime;
  public long ipAddress;

  public YsbEvent() {}

  public static YsbEvent make(long mixedSeed, long seq) {
    YsbEvent e = new YsbEvent();
    e.userId = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 1), 0, 999_999);
    e.pageId = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 2), 0, 999_999);
    e.adId = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 3), 0, 999);
    e.adType = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 4), 0, 4);
    e.eventType = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 5), 0, 2);
    e.eventTime = 1_600_000_000_000L + seq / 100;
    e.ipAddress = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 6), 0, 4_294_967_295L);
    return e;
  }

  /**
   * Only the fields the YSB query reads (ad_id, event_type, event_time), as weir's generator
   * source evaluates only the expressions some operator reads; the others stay 0.
   */
  public static YsbEvent makePruned(long mixedSeed, long seq) {
    YsbEvent e = new YsbEvent();
    e.adId = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 3), 0, 999);
    e.eventType = Random64.randomInt(Random64.randomWord(mixedSeed, seq, 5), 0, 2);
    e.eventTime = 1_600_000_000_000L + seq / 100;
    return e;
  }

  public String describe(long seq) {
    return "Y|" + seq + "|" + userId + "|" + pageId + "|" + adId + "|" + adType + "|" + eventType
        + "|" + eventTime + "|" + ipAddress;
  }
}
