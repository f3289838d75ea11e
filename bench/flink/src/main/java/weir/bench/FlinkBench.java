// SPDX-License-Identifier: Apache-2.0
package weir.bench;

import java.time.Duration;
import java.util.Locale;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.JoinFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.api.java.tuple.Tuple5;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.time.Time;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The benchmark queries of bench/nexmark and bench/ysb as Flink DataStream jobs on a local
 * mini-cluster, over the Java port of weir's generators; prints one JSON line like
 * weir_baseline's. Usage: FlinkBench q0|q1|q2|q3|q5|q7|q8|ysb --events N --parallelism P [--digest]
 * [--seed S] [--pruned].
 *
 * <p>By default the sources generate whole events. With --pruned they generate only the fields
 * the query reads, the same pruning weir's sources do by projection push-down (text fields no
 * operator reads left empty, YSB's unread integers not computed), so that weir and Flink can be
 * compared generating the same work in either mode (bench/README.md).
 */
public final class FlinkBench {
  static final long RANK_SHIFT = 68_719_476_736L; // 2^36

  private FlinkBench() {}

  // -- sources: subtask i of p generates the event numbers congruent to i, like weir --------

  static final class BidSource extends RichParallelSourceFunction<Bid> {
    private static final long serialVersionUID = 1L;
    private final long events;
    private final long seed;
    private final boolean withChannel;
    private final boolean withExtra;
    private volatile boolean running = true;

    BidSource(long events, long seed) {
      this(events, seed, true, true);
    }

    /** withChannel, withExtra: whether channel and url, and extra, are generated. */
    BidSource(long events, long seed, boolean withChannel, boolean withExtra) {
      this.events = events;
      this.seed = seed;
      this.withChannel = withChannel;
      this.withExtra = withExtra;
    }

    @Override
    public void run(SourceContext<Bid> ctx) {
      NexmarkGenerator gen = new NexmarkGenerator(seed);
      int p = getRuntimeContext().getNumberOfParallelSubtasks();
      for (long n = getRuntimeContext().getIndexOfThisSubtask(); n < events && running; n += p) {
        if (gen.kindOf(n) == NexmarkGenerator.BID) {
          ctx.collect(gen.makeBid(n, withChannel, withExtra));
        }
      }
    }

    @Override
    public void cancel() {
      running = false;
    }
  }

  /** The persons (kind PERSON) or auctions (AUCTION) among the events, as BidSource. */
  static final class EventSource<T> extends RichParallelSourceFunction<T> {
    private static final long serialVersionUID = 1L;
    private final long events;
    private final long seed;
    private final int kind;
    private final boolean whole;
    private volatile boolean running = true;

    EventSource(long events, long seed, int kind) {
      this(events, seed, kind, true);
    }

    /** whole false: without the text fields q3 and q8 never read (email, item, ...). */
    EventSource(long events, long seed, int kind, boolean whole) {
      this.events = events;
      this.seed = seed;
      this.kind = kind;
      this.whole = whole;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void run(SourceContext<T> ctx) {
      NexmarkGenerator gen = new NexmarkGenerator(seed);
      int p = getRuntimeContext().getNumberOfParallelSubtasks();
      for (long n = getRuntimeContext().getIndexOfThisSubtask(); n < events && running; n += p) {
        if (gen.kindOf(n) == kind) {
          ctx.collect((T) (kind == NexmarkGenerator.PERSON ? gen.makePerson(n, whole)
                                                           : gen.makeAuction(n, whole)));
        }
      }
    }

    @Override
    public void cancel() {
      running = false;
    }
  }

  static final class YsbSource extends RichParallelSourceFunction<YsbEvent> {
    private static final long serialVersionUID = 1L;
    private final long events;
    private final long seed;
    private final boolean pruned;
    private volatile boolean running = true;

    YsbSource(long events, long seed, boolean pruned) {
      this.events = events;
      this.seed = seed;
      this.pruned = pruned;
    }

    @Override
    public void run(SourceContext<YsbEvent> ctx) {
      long mseed = Random64.mixedSeed(seed);
      int p = getRuntimeContext().getNumberOfParallelSubtasks();
      for (long n = getRuntimeContext().getIndexOfThisSubtask(); n < events && running; n += p) {
        ctx.collect(pruned ? YsbEvent.makePruned(mseed, n) : YsbEvent.make(mseed, n));
      }
    }

    @Override
    public void cancel() {
      running = false;
    }
  }

  // -- the sink: counts rows and sums their weir row hashes --------------------------------

  interface RowHash<T> extends java.io.Serializable {
    long hash(T row);
  }

  static final class CountingSink<T> extends RichSinkFunction<T> {
    private static final long serialVersionUID = 1L;
    private final RowHash<T> hash;
    private final boolean digest;
    private final LongCounter rows = new LongCounter();
    private final LongCounter sum = new LongCounter();

    CountingSink(RowHash<T> hash, boolean digest) {
      this.hash = hash;
      this.digest = digest;
    }

    @Override
    public void open(Configuration parameters) {
      getRuntimeContext().addAccumulator("rows", rows);
      getRuntimeContext().addAccumulator("digest", sum);
    }

    @Override
    public void invoke(T value, Context context) {
      rows.add(1);
      if (digest) {
        sum.add(hash.hash(value)); // long addition wraps: the sum is mod 2^64
      }
    }
  }

  // -- window functions ----------------------------------------------------------------------

  static final class Count<T> implements AggregateFunction<T, Long, Long> {
    private static final long serialVersionUID = 1L;

    @Override
    public Long createAccumulator() {
      return 0L;
    }

    @Override
    public Long add(T value, Long acc) {
      return acc + 1;
    }

    @Override
    public Long getResult(Long acc) {
      return acc;
    }

    @Override
    public Long merge(Long a, Long b) {
      return a + b;
    }
  }

  /** max(rank) over (key, rank) pairs. */
  static final class MaxRank implements AggregateFunction<Tuple2<Long, Long>, Long, Long> {
    private static final long serialVersionUID = 1L;

    @Override
    public Long createAccumulator() {
      return Long.MIN_VALUE;
    }

    @Override
    public Long add(Tuple2<Long, Long> value, Long acc) {
      return Math.max(acc, value.f1);
    }

    @Override
    public Long getResult(Long acc) {
      return acc;
    }

    @Override
    public Long merge(Long a, Long b) {
      return Math.max(a, b);
    }
  }

  /** count(*) and max(price) of bids: the accumulator is {count, max}. */
  static final class CountMaxPrice implements AggregateFunction<Bid, long[], Tuple2<Long, Long>> {
    private static final long serialVersionUID = 1L;

    @Override
    public long[] createAccumulator() {
      return new long[] {0, Long.MIN_VALUE};
    }

    @Override
    public long[] add(Bid value, long[] acc) {
      acc[0] += 1;
      acc[1] = Math.max(acc[1], value.price);
      return acc;
    }

    @Override
    public Tuple2<Long, Long> getResult(long[] acc) {
      return Tuple2.of(acc[0], acc[1]);
    }

    @Override
    public long[] merge(long[] a, long[] b) {
      return new long[] {a[0] + b[0], Math.max(a[1], b[1])};
    }
  }

  /** (auction, window_start, window_end, num, max_price): the ingest benchmark's tumble. */
  static final class TumbleRow extends ProcessWindowFunction<Tuple2<Long, Long>,
      Tuple5<Long, Long, Long, Long, Long>, Long, TimeWindow> {
    private static final long serialVersionUID = 1L;

    @Override
    public void process(Long key, Context ctx, Iterable<Tuple2<Long, Long>> values,
        Collector<Tuple5<Long, Long, Long, Long, Long>> out) {
      Tuple2<Long, Long> v = values.iterator().next();
      out.collect(Tuple5.of(key, ctx.window().getStart(), ctx.window().getEnd(), v.f0, v.f1));
    }
  }

  /** (key, window_start, window_end, aggregate). */
  static final class WithWindow
      extends ProcessWindowFunction<Long, Tuple4<Long, Long, Long, Long>, Long, TimeWindow> {
    private static final long serialVersionUID = 1L;

    @Override
    public void process(Long key, Context ctx, Iterable<Long> values,
        Collector<Tuple4<Long, Long, Long, Long>> out) {
      long v = values.iterator().next();
      out.collect(Tuple4.of(key, ctx.window().getStart(), ctx.window().getEnd(), v));
    }
  }

  static final class LongKey<T> implements KeySelector<T, Long> {
    private static final long serialVersionUID = 1L;
    private final RowHash<T> key;

    LongKey(RowHash<T> key) {
      this.key = key;
    }

    @Override
    public Long getKey(T value) {
      return key.hash(value);
    }
  }

  /**
   * Nexmark q3's regular inner join of persons (keyed by id) and auctions (keyed by seller), as
   * Flink SQL runs an unwindowed join: both sides kept in keyed state for ever. A person's row
   * is kept (persons never change); an auction arriving before its seller waits in a list and
   * is emitted when the seller arrives. Output: (name, city, state, auction id).
   */
  static final class RegularJoinQ3 extends KeyedCoProcessFunction<Long, Person, Auction,
      Tuple4<String, String, String, Long>> {
    private static final long serialVersionUID = 1L;
    private transient ValueState<Tuple3<String, String, String>> person;
    private transient ListState<Long> waiting;

    @Override
    public void open(Configuration parameters) {
      person = getRuntimeContext().getState(new ValueStateDescriptor<>("person",
          Types.TUPLE(Types.STRING, Types.STRING, Types.STRING)));
      waiting = getRuntimeContext().getListState(
          new ListStateDescriptor<>("auctions", Types.LONG));
    }

    @Override
    public void processElement1(Person p, Context ctx,
        Collector<Tuple4<String, String, String, Long>> out) throws Exception {
      person.update(Tuple3.of(p.name, p.city, p.state));
      for (Long id : waiting.get()) {
        out.collect(Tuple4.of(p.name, p.city, p.state, id));
      }
      waiting.clear();
    }

    @Override
    public void processElement2(Auction a, Context ctx,
        Collector<Tuple4<String, String, String, Long>> out) throws Exception {
      Tuple3<String, String, String> p = person.value();
      if (p != null) {
        out.collect(Tuple4.of(p.f0, p.f1, p.f2, a.id));
      } else {
        waiting.add(a.id);
      }
    }
  }

  // -- the queries -----------------------------------------------------------------------------

  static DataStream<Bid> bids(StreamExecutionEnvironment env, long events, long seed) {
    return bids(env, events, seed, true, true);
  }

  static DataStream<Bid> bids(StreamExecutionEnvironment env, long events, long seed,
      boolean withChannel, boolean withExtra) {
    return env.addSource(new BidSource(events, seed, withChannel, withExtra), "bids")
        .assignTimestampsAndWatermarks(WatermarkStrategy.<Bid>forBoundedOutOfOrderness(
            Duration.ofSeconds(4)).withTimestampAssigner((b, t) -> b.dateTime));
  }

  /** Where a query's result goes: the counting sink, or (FlinkKafkaBench) a Kafka topic. */
  interface ResultSink {
    /** Attaches the sink to result; hash is the row's weir row hash, names its columns. */
    <T> void attach(DataStream<T> result, RowHash<T> hash, String... names);
  }

  /** The counting (discarding) sink: rows, and with digest their hashes' sum. */
  static ResultSink counting(boolean digest) {
    return new ResultSink() {
      @Override
      public <T> void attach(DataStream<T> result, RowHash<T> hash, String... names) {
        result.addSink(new CountingSink<T>(hash, digest));
      }
    };
  }

  /** The Nexmark bid queries over a stream of bids (event time already assigned). */
  static void bidQuery(DataStream<Bid> bids, String query, ResultSink sink) {
    switch (query) {
      case "q0":
        sink.<Tuple5<Long, Long, Long, Long, String>>attach(bids
            .map(b -> Tuple5.of(b.auction, b.bidder, b.price, b.dateTime, b.extra))
            .returns(Types.TUPLE(Types.LONG, Types.LONG, Types.LONG, Types.LONG, Types.STRING)),
            t -> new RowHasher().add(t.f0).add(t.f1).add(t.f2).add(t.f3).addString(t.f4)
                .finish(),
            "auction", "bidder", "price", "date_time", "extra");
        break;
      case "q1":
        sink.<Tuple5<Long, Long, Double, Long, String>>attach(bids
            .map(b -> Tuple5.of(b.auction, b.bidder, b.price * 0.908, b.dateTime, b.extra))
            .returns(Types.TUPLE(Types.LONG, Types.LONG, Types.DOUBLE, Types.LONG, Types.STRING)),
            t -> new RowHasher().add(t.f0).add(t.f1).addDouble(t.f2).add(t.f3)
                .addString(t.f4).finish(),
            "auction", "bidder", "price", "date_time", "extra");
        break;
      case "q2":
        sink.<Tuple2<Long, Long>>attach(bids
            .filter(b -> b.auction % 123 == 0)
            .map(b -> Tuple2.of(b.auction, b.price))
            .returns(Types.TUPLE(Types.LONG, Types.LONG)),
            t -> new RowHasher().add(t.f0).add(t.f1).finish(),
            "auction", "price");
        break;
      case "q5":
        sink.<Tuple4<Long, Long, Long, Long>>attach(bids
            .keyBy(new LongKey<Bid>(b -> b.auction))
            .window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(2)))
            .aggregate(new Count<Bid>(), new WithWindow())
            // (window_start, num * 2^36 + auction), stamped window_end - 1 by Flink.
            .map(t -> Tuple2.of(t.f1, t.f3 * RANK_SHIFT + t.f0))
            .returns(Types.TUPLE(Types.LONG, Types.LONG))
            .keyBy(new LongKey<Tuple2<Long, Long>>(t -> t.f0))
            .window(TumblingEventTimeWindows.of(Time.seconds(2)))
            .aggregate(new MaxRank(), new WithWindow())
            // (window_start, window_end, auction, num) as weir's q5 selects them.
            .map(t -> Tuple4.of(t.f0, t.f2, t.f3 % RANK_SHIFT, t.f3 / RANK_SHIFT))
            .returns(Types.TUPLE(Types.LONG, Types.LONG, Types.LONG, Types.LONG)),
            t -> new RowHasher().add(t.f0).add(t.f1).add(t.f2).add(t.f3).finish(),
            "window_start", "window_end", "auction", "num");
        break;
      case "q7":
        sink.<Tuple4<Long, Long, Long, Long>>attach(bids
            .map(b -> Tuple2.of(0L, b.price * RANK_SHIFT + b.auction))
            .returns(Types.TUPLE(Types.LONG, Types.LONG))
            .keyBy(new LongKey<Tuple2<Long, Long>>(t -> t.f0))
            .window(TumblingEventTimeWindows.of(Time.seconds(10)))
            .aggregate(new MaxRank(), new WithWindow())
            // (window_start, window_end, auction, price) as weir's q7 selects them.
            .map(t -> Tuple4.of(t.f1, t.f2, t.f3 % RANK_SHIFT, t.f3 / RANK_SHIFT))
            .returns(Types.TUPLE(Types.LONG, Types.LONG, Types.LONG, Types.LONG)),
            t -> new RowHasher().add(t.f0).add(t.f1).add(t.f2).add(t.f3).finish(),
            "window_start", "window_end", "auction", "price");
        break;
      case "tumble":
        // The ingest benchmark's keyed tumbling window (bench/ingest/tumble.toml).
        sink.<Tuple5<Long, Long, Long, Long, Long>>attach(bids
            .keyBy(new LongKey<Bid>(b -> b.auction))
            .window(TumblingEventTimeWindows.of(Time.seconds(10)))
            .aggregate(new CountMaxPrice(), new TumbleRow()),
            t -> new RowHasher().add(t.f0).add(t.f1).add(t.f2).add(t.f3).add(t.f4).finish(),
            "auction", "window_start", "window_end", "num", "max_price");
        break;
      default:
        throw new IllegalArgumentException("unknown query " + query);
    }
  }

  static void build(StreamExecutionEnvironment env, String query, long events, long seed,
      boolean digest, boolean pruned) {
    switch (query) {
      case "q0":
      case "q1":
      case "q2":
      case "q5":
      case "q7": {
        // Pruned as weir's push-down prunes: channel and url are read by no query here,
        // extra only by q0 and q1.
        boolean extra = !pruned || query.equals("q0") || query.equals("q1");
        bidQuery(bids(env, events, seed, !pruned, extra), query, counting(digest));
        break;
      }
      case "q8":
        // Monitor new users: persons and auctions of one seller in the same 10 s
        // tumbling window (Beam's Query8), joined by Flink's window join.
        DataStream<Person> persons = env
            .addSource(new EventSource<Person>(events, seed, NexmarkGenerator.PERSON, !pruned), "persons",
                TypeInformation.of(Person.class))
            .assignTimestampsAndWatermarks(WatermarkStrategy.<Person>forBoundedOutOfOrderness(
                Duration.ofSeconds(4)).withTimestampAssigner((e, t) -> e.dateTime));
        DataStream<Auction> auctions = env
            .addSource(new EventSource<Auction>(events, seed, NexmarkGenerator.AUCTION, !pruned),
                "auctions", TypeInformation.of(Auction.class))
            .assignTimestampsAndWatermarks(WatermarkStrategy.<Auction>forBoundedOutOfOrderness(
                Duration.ofSeconds(4)).withTimestampAssigner((e, t) -> e.dateTime));
        persons.join(auctions)
            .where(new LongKey<Person>(e -> e.id))
            .equalTo(new LongKey<Auction>(e -> e.seller))
            .window(TumblingEventTimeWindows.of(Time.seconds(10)))
            .apply((JoinFunction<Person, Auction, Tuple3<Long, String, Long>>)
                (pe, a) -> Tuple3.of(pe.id, pe.name, a.reserve),
                Types.TUPLE(Types.LONG, Types.STRING, Types.LONG))
            .addSink(new CountingSink<Tuple3<Long, String, Long>>(
                t -> new RowHasher().add(t.f0).addString(t.f1).add(t.f2).finish(), digest));
        break;
      case "q3": {
        // Local item suggestion: category-10 auctions of sellers in OR, ID or CA, a regular
        // (unwindowed) inner join on person id = seller, both sides in keyed state.
        DataStream<Person> localPersons = env
            .addSource(new EventSource<Person>(events, seed, NexmarkGenerator.PERSON, !pruned), "persons",
                TypeInformation.of(Person.class))
            .filter(e -> e.state.equals("OR") || e.state.equals("ID") || e.state.equals("CA"));
        DataStream<Auction> category10 = env
            .addSource(new EventSource<Auction>(events, seed, NexmarkGenerator.AUCTION, !pruned),
                "auctions", TypeInformation.of(Auction.class))
            .filter(e -> e.category == 10);
        localPersons.connect(category10)
            .keyBy(new LongKey<Person>(e -> e.id), new LongKey<Auction>(e -> e.seller))
            .process(new RegularJoinQ3(),
                Types.TUPLE(Types.STRING, Types.STRING, Types.STRING, Types.LONG))
            .addSink(new CountingSink<Tuple4<String, String, String, Long>>(
                t -> new RowHasher().addString(t.f0).addString(t.f1).addString(t.f2).add(t.f3)
                    .finish(), digest));
        break;
      }
      case "ysb":
        env.addSource(new YsbSource(events, seed, pruned), "events")
            .assignTimestampsAndWatermarks(WatermarkStrategy.<YsbEvent>forBoundedOutOfOrderness(
                Duration.ZERO).withTimestampAssigner((e, t) -> e.eventTime))
            .filter(e -> e.eventType == 0)
            .map(e -> e.adId / 10)
            .returns(Types.LONG)
            .keyBy(new LongKey<Long>(c -> c))
            .window(TumblingEventTimeWindows.of(Time.seconds(10)))
            .aggregate(new Count<Long>(), new WithWindow())
            .addSink(new CountingSink<Tuple4<Long, Long, Long, Long>>(
                t -> new RowHasher().add(t.f0).add(t.f1).add(t.f2).add(t.f3).finish(), digest));
        break;
      default:
        throw new IllegalArgumentException("unknown query " + query);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: FlinkBench q0|q1|q2|q3|q5|q7|q8|ysb --events N --parallelism P "
          + "[--digest] [--seed S] [--pruned]");
      System.exit(2);
    }
    String query = args[0];
    long events = 1_000_000;
    long seed = 0;
    int parallelism = 1;
    boolean digest = false;
    boolean pruned = false;
    for (int i = 1; i < args.length; ++i) {
      switch (args[i]) {
        case "--events": events = Long.parseLong(args[++i]); break;
        case "--seed": seed = Long.parseLong(args[++i]); break;
        case "--parallelism": parallelism = Integer.parseInt(args[++i]); break;
        case "--digest": digest = true; break;
        case "--pruned": pruned = true; break;
        default:
          System.err.println("unknown argument " + args[i]);
          System.exit(2);
      }
    }
    Configuration conf = new Configuration();
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
    env.getConfig().enableObjectReuse();
    build(env, query, events, seed, digest, pruned);
    long start = System.nanoTime();
    JobExecutionResult result = env.execute("weir-bench-" + query);
    double wall = (System.nanoTime() - start) / 1e9;
    double net = result.getNetRuntime() / 1e3;
    Long rows = result.getAccumulatorResult("rows");
    Long sum = result.getAccumulatorResult("digest");
    StringBuilder out = new StringBuilder();
    out.append(String.format(Locale.ROOT,
        "{\"engine\":\"flink\",\"query\":\"%s\",\"mode\":\"%s\",\"parallelism\":%d,"
            + "\"events\":%d,"
            + "\"seconds\":%.6f,\"wall_seconds\":%.6f,\"events_per_s\":%.1f,\"rows\":%d",
        query, pruned ? "pruned" : "whole", parallelism, events, net, wall, events / net, rows == null ? 0 : rows));
    if (digest) {
      out.append(String.format(Locale.ROOT, ",\"digest\":\"%016x\"", sum == null ? 0 : sum));
    }
    out.append('}');
    System.out.println(out);
  }
}
