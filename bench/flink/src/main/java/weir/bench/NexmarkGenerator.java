// SPDX-License-Identifier: Apache-2.0
package weir.bench;

import java.io.Serializable;

/** The bit-exact Java port of weir::nexmark::generator (src/connectors/nexmark.cpp; the rules
 * are in bench/nexmark/README.md): event n is a pure function of (seed, n). */
public final class NexmarkGenerator implements Serializable {
  private static final long serialVersionUID = 1L;

  public static final long FIRST_PERSON_ID = 1000;
  public static final long FIRST_AUCTION_ID = 1000;
  public static final long FIRST_CATEGORY_ID = 10;
  public static final long NUM_CATEGORIES = 5;
  public static final long PERSON_ID_LEAD = 10;
  public static final long AUCTION_ID_LEAD = 10;
  public static final long NUM_ACTIVE_PEOPLE = 1000;
  public static final long NUM_IN_FLIGHT_AUCTIONS = 100;
  public static final long HOT_BLOCK = 100;
  public static final int NUM_CHANNELS = 10000;

  public static final int PERSON = 0;
  public static final int AUCTION = 1;
  public static final int BID = 2;

  private static final String[] FIRST_NAMES = {
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"
  };
  private static final String[] LAST_NAMES = {
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"
  };
  private static final String[] US_CITIES = {
    "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle",
    "Kent", "Cheyenne"
  };
  private static final String[] US_STATES = {"AZ", "CA", "ID", "OR", "WA", "WY"};
  private static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
  private static final String[] HOT_URLS = {
    "https://www.nexmark.com/google/item.htm?query=1",
    "https://www.nexmark.com/facebook/item.htm?query=1",
    "https://www.nexmark.com/baidu/item.htm?query=1",
    "https://www.nexmark.com/apple/item.htm?query=1"
  };
  /** 10^(1/4096) in Q59 fixed point. */
  private static final long PRICE_STEP_Q59 = 576784903449122374L;

  // Configuration (the C++ defaults; the benchmark uses only the seed).
  private final long seed;
  private final long baseTime = 1_436_918_400_000L;
  private final long eventRate = 10_000;
  private final long personProportion = 1;
  private final long auctionProportion = 3;
  private final long bidProportion = 46;
  private final long hotAuctionRatio = 2;
  private final long hotBidderRatio = 4;
  private final long hotSellerRatio = 4;
  private final long avgPersonBytes = 200;
  private final long avgAuctionBytes = 500;
  private final long avgBidBytes = 100;

  private final long mixedSeed;
  private final String[] channelUrls = new String[NUM_CHANNELS];
  private final String[] channelNames = new String[NUM_CHANNELS];
  private final long[] priceTable = new long[4097];

  /** The random stream of one event: splitmix64 from randomWord(mixedSeed, n, 0). */
  static final class EventRandom {
    private long state;

    EventRandom(long state) {
      this.state = state;
    }

    long next() {
      state += Random64.SEQ_MULTIPLIER;
      return Random64.mix64(state);
    }

    long below(long bound) {
      return Random64.mulHigh(next(), bound);
    }

    void letters(StringBuilder out, long n) {
      for (long i = 0; i < n; i += 8) {
        long w = next();
        long k = Math.min(8, n - i);
        for (long j = 0; j < k; ++j) {
          out.append((char) ('a' + Long.remainderUnsigned(w & 0xFF, 26)));
          w >>>= 8;
        }
      }
    }

    /** Appends the text to out, or with out null only draws its words; returns its length. */
    long text(StringBuilder out, long maxLen) {
      long n = 3 + below(maxLen - 3);
      if (out == null) {
        for (long i = 0; i < n; i += 8) {
          next();
        }
        return n;
      }
      for (long i = 0; i < n; i += 8) {
        long w = next();
        long k = Math.min(8, n - i);
        for (long j = 0; j < k; ++j) {
          long c = (w & 0xFF) % 27;
          out.append(c == 26 ? ' ' : (char) ('a' + c));
          w >>>= 8;
        }
      }
      return n;
    }
  }

  public NexmarkGenerator(long seed) {
    this.seed = seed;
    this.mixedSeed = Random64.mixedSeed(seed);
    priceTable[0] = 1L << 59;
    for (int i = 1; i < priceTable.length; ++i) {
      long t = priceTable[i - 1];
      priceTable[i] = (Random64.mulHigh(t, PRICE_STEP_Q59) << 5) | ((t * PRICE_STEP_Q59) >>> 59);
    }
    for (int k = 0; k < NUM_CHANNELS; ++k) {
      EventRandom r = new EventRandom(Random64.randomWord(mixedSeed, k, 1));
      StringBuilder url = new StringBuilder("https://www.nexmark.com/");
      r.letters(url, 3 + r.below(3));
      url.append('/');
      r.letters(url, 3 + r.below(3));
      url.append('/');
      r.letters(url, 3 + r.below(3));
      url.append("/item.htm?query=1");
      if (r.below(10) > 0) {
        url.append("&channel_id=").append(Integer.reverse(k) & 0x7FFFFFFF);
      }
      channelUrls[k] = url.toString();
      channelNames[k] = "channel-" + k;
    }
  }

  public long seed() {
    return seed;
  }

  public long totalProportion() {
    return personProportion + auctionProportion + bidProportion;
  }

  public int kindOf(long n) {
    long rem = n % totalProportion();
    if (rem < personProportion) {
      return PERSON;
    }
    if (rem < personProportion + auctionProportion) {
      return AUCTION;
    }
    return BID;
  }

  public long timestampOf(long n) {
    return baseTime + n * 1000 / eventRate;
  }

  public long lastBase0PersonId(long n) {
    long total = totalProportion();
    long epoch = n / total;
    long offset = n % total;
    if (offset >= personProportion) {
      offset = personProportion - 1;
    }
    return epoch * personProportion + offset;
  }

  public long lastBase0AuctionId(long n) {
    long total = totalProportion();
    long epoch = n / total;
    long offset = n % total;
    if (offset < personProportion) {
      --epoch;
      offset = auctionProportion - 1;
    } else if (offset >= personProportion + auctionProportion) {
      offset = auctionProportion - 1;
    } else {
      offset -= personProportion;
    }
    return epoch * auctionProportion + offset;
  }

  private long nextBase0PersonId(long n, EventRandom r) {
    long numPeople = lastBase0PersonId(n) + 1;
    long active = Math.min(numPeople, NUM_ACTIVE_PEOPLE);
    return numPeople - active + r.below(active + PERSON_ID_LEAD);
  }

  private long nextBase0AuctionId(long n, EventRandom r) {
    long maxAuction = lastBase0AuctionId(n);
    long minAuction = Math.max(maxAuction - NUM_IN_FLIGHT_AUCTIONS, 0);
    return minAuction + r.below(maxAuction - minAuction + 1 + AUCTION_ID_LEAD);
  }

  long nextPrice(EventRandom r) {
    long u = r.below(6 * 4096);
    long scale = 100;
    for (long d = u / 4096; d > 0; --d) {
      scale *= 10;
    }
    long t = priceTable[(int) (u % 4096)];
    return (Random64.mulHigh(t, scale) << 5) | ((t * scale) >>> 59);
  }

  private String nextExtra(EventRandom r, long currentSize, long desiredAvg) {
    if (currentSize > desiredAvg) {
      return "";
    }
    long avg = desiredAvg - currentSize;
    long delta = (avg * 2 + 5) / 10;
    long size = avg - delta + (delta == 0 ? 0 : r.below(2 * delta));
    StringBuilder out = new StringBuilder((int) size);
    r.letters(out, size);
    return out.toString();
  }

  public Person makePerson(long n) {
    return makePerson(n, true);
  }

  /**
   * The person of event n; with whole false, its email address and extra stay empty (not
   * generated, as weir's source skips text fields no operator reads) and every other field
   * is the same.
   */
  public Person makePerson(long n, boolean whole) {
    EventRandom r = new EventRandom(Random64.randomWord(mixedSeed, n, 0));
    Person p = new Person();
    p.id = lastBase0PersonId(n) + FIRST_PERSON_ID;
    p.name = FIRST_NAMES[(int) r.below(FIRST_NAMES.length)] + " "
        + LAST_NAMES[(int) r.below(LAST_NAMES.length)];
    long emailSize;
    if (whole) {
      StringBuilder email = new StringBuilder();
      r.text(email, 7);
      email.append('@');
      r.text(email, 5);
      email.append(".com");
      p.emailAddress = email.toString();
      emailSize = p.emailAddress.length();
    } else {
      long user = r.text(null, 7);
      long host = r.text(null, 5);
      p.emailAddress = "";
      emailSize = user + 1 + host + 4;
    }
    StringBuilder card = new StringBuilder();
    for (int i = 0; i < 4; ++i) {
      if (i > 0) {
        card.append(' ');
      }
      long v = r.below(10000);
      card.append((char) ('0' + v / 1000)).append((char) ('0' + v / 100 % 10))
          .append((char) ('0' + v / 10 % 10)).append((char) ('0' + v % 10));
    }
    p.creditCard = card.toString();
    p.city = US_CITIES[(int) r.below(US_CITIES.length)];
    p.state = US_STATES[(int) r.below(US_STATES.length)];
    p.dateTime = timestampOf(n);
    long size = 8 + p.name.length() + emailSize + p.creditCard.length()
        + p.city.length() + p.state.length();
    p.extra = whole ? nextExtra(r, size, avgPersonBytes) : "";
    return p;
  }

  public Auction makeAuction(long n) {
    return makeAuction(n, true);
  }

  /** The auction of event n; with whole false, without item name, description and extra. */
  public Auction makeAuction(long n, boolean whole) {
    EventRandom r = new EventRandom(Random64.randomWord(mixedSeed, n, 0));
    Auction a = new Auction();
    a.id = lastBase0AuctionId(n) + FIRST_AUCTION_ID;
    long seller;
    if (r.below(hotSellerRatio) > 0) {
      seller = lastBase0PersonId(n) / HOT_BLOCK * HOT_BLOCK;
    } else {
      seller = nextBase0PersonId(n, r);
    }
    a.seller = seller + FIRST_PERSON_ID;
    a.category = FIRST_CATEGORY_ID + r.below(NUM_CATEGORIES);
    a.initialBid = nextPrice(r);
    a.reserve = a.initialBid + nextPrice(r);
    a.dateTime = timestampOf(n);
    long eventsForAuctions = NUM_IN_FLIGHT_AUCTIONS * totalProportion() / auctionProportion;
    long horizon = timestampOf(n + eventsForAuctions) - a.dateTime;
    a.expires = a.dateTime + 1 + r.below(Math.max(horizon * 2, 1));
    StringBuilder item = whole ? new StringBuilder() : null;
    long itemSize = r.text(item, 20);
    a.itemName = whole ? item.toString() : "";
    StringBuilder desc = whole ? new StringBuilder() : null;
    long descSize = r.text(desc, 100);
    a.description = whole ? desc.toString() : "";
    long size = 8 + itemSize + descSize + 8 + 8 + 8 + 8 + 8;
    a.extra = whole ? nextExtra(r, size, avgAuctionBytes) : "";
    return a;
  }

  public Bid makeBid(long n) {
    return makeBid(n, true, true);
  }

  /**
   * The bid of event n. withChannel false leaves channel and url empty (their two draws
   * skipped), withExtra false the extra: as weir's source skips text fields no operator
   * reads. The other fields are the same.
   */
  public Bid makeBid(long n, boolean withChannel, boolean withExtra) {
    EventRandom r = new EventRandom(Random64.randomWord(mixedSeed, n, 0));
    Bid b = new Bid();
    long auction;
    if (r.below(hotAuctionRatio) > 0) {
      auction = lastBase0AuctionId(n) / HOT_BLOCK * HOT_BLOCK;
    } else {
      auction = nextBase0AuctionId(n, r);
    }
    b.auction = auction + FIRST_AUCTION_ID;
    long bidder;
    if (r.below(hotBidderRatio) > 0) {
      bidder = lastBase0PersonId(n) / HOT_BLOCK * HOT_BLOCK + 1;
    } else {
      bidder = nextBase0PersonId(n, r);
    }
    b.bidder = bidder + FIRST_PERSON_ID;
    b.price = nextPrice(r);
    if (!withChannel) {
      r.next();
      r.next();
      b.channel = "";
      b.url = "";
    } else if (r.below(2) > 0) {
      int i = (int) r.below(HOT_CHANNELS.length);
      b.channel = HOT_CHANNELS[i];
      b.url = HOT_URLS[i];
    } else {
      int k = (int) r.below(NUM_CHANNELS);
      b.channel = channelNames[k];
      b.url = channelUrls[k];
    }
    b.dateTime = timestampOf(n);
    b.extra = withExtra ? nextExtra(r, 32, avgBidBytes) : "";
    return b;
  }

  /** The line of event n in bench/vectors/nexmark-first-1000.txt. */
  public String describe(long n) {
    StringBuilder out = new StringBuilder();
    switch (kindOf(n)) {
      case PERSON: {
        Person p = makePerson(n);
        out.append("P|").append(n).append('|').append(p.id).append('|').append(p.name)
            .append('|').append(p.emailAddress).append('|').append(p.creditCard).append('|')
            .append(p.city).append('|').append(p.state).append('|').append(p.dateTime)
            .append('|').append(p.extra);
        break;
      }
      case AUCTION: {
        Auction a = makeAuction(n);
        out.append("A|").append(n).append('|').append(a.id).append('|').append(a.itemName)
            .append('|').append(a.description).append('|').append(a.initialBid).append('|')
            .append(a.reserve).append('|').append(a.dateTime).append('|').append(a.expires)
            .append('|').append(a.seller).append('|').append(a.category).append('|')
            .append(a.extra);
        break;
      }
      default: {
        Bid b = makeBid(n);
        out.append("B|").append(n).append('|').append(b.auction).append('|').append(b.bidder)
            .append('|').append(b.price).append('|').append(b.channel).append('|').append(b.url)
            .append('|').append(b.dateTime).append('|').append(b.extra);
        break;
      }
    }
    return out.toString();
  }
}
