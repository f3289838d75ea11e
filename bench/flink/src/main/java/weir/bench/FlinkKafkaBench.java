// SPDX-License-Identifier: Apache-2.0
package weir.bench;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Locale;
import java.util.Properties;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The Nexmark bid queries of FlinkBench over JSON bids in a Kafka topic: a {@link KafkaSource}
 * from the earliest offsets, bounded to the latest offsets at start
 * ({@code setBounded(OffsetsInitializer.latest())}), its values read by a Jackson ObjectMapper
 * into the {@link Bid} POJO (one mapper per reader, reused), as a Flink user would write it.
 * The result goes to the counting (discarding) sink, or with {@code --sink exactly_once} to a
 * {@link KafkaSink} with {@code DeliveryGuarantee.EXACTLY_ONCE}, one JSON object per row, with
 * checkpoints every {@code --checkpoint-interval-ms}. Prints one JSON line like FlinkBench.
 *
 * <p>Usage: FlinkKafkaBench q0|q1|q2|q5|q7 --bootstrap HOST:PORT --topic T --parallelism P
 * [--digest] [--sink none|exactly_once --out-topic T2 [--checkpoint-interval-ms MS]]
 * [-X key=value]... (Kafka client properties, for the source and the sink)
 */
public final class FlinkKafkaBench {
  private FlinkKafkaBench() {}

  /** A Nexmark bid from its JSON text: {"auction":..,"bidder":..,..,"date_time":..,..}. */
  static final class BidDeserializer implements DeserializationSchema<Bid> {
    private static final long serialVersionUID = 1L;
    private transient ObjectMapper mapper;

    @Override
    public void open(InitializationContext context) {
      mapper = new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    }

    @Override
    public Bid deserialize(byte[] message) throws IOException {
      return mapper.readValue(message, Bid.class);
    }

    @Override
    public boolean isEndOfStream(Bid next) {
      return false;
    }

    @Override
    public TypeInformation<Bid> getProducedType() {
      return TypeInformation.of(Bid.class);
    }
  }

  /** A result tuple as one JSON object, its fields named, through a reused Jackson mapper. */
  static final class TupleJson<T> implements SerializationSchema<T> {
    private static final long serialVersionUID = 1L;
    private final String[] names;
    private transient ObjectMapper mapper;
    private transient ByteArrayOutputStream buffer;

    TupleJson(String[] names) {
      this.names = names;
    }

    @Override
    public void open(InitializationContext context) {
      mapper = new ObjectMapper();
      buffer = new ByteArrayOutputStream(256);
    }

    @Override
    public byte[] serialize(T row) {
      Tuple t = (Tuple) row;
      buffer.reset();
      try (JsonGenerator g = mapper.getFactory().createGenerator(buffer)) {
        g.writeStartObject();
        for (int i = 0; i < names.length; ++i) {
          g.writeFieldName(names[i]);
          Object v = t.getField(i);
          if (v instanceof Long) {
            g.writeNumber((Long) v);
          } else if (v instanceof Double) {
            g.writeNumber((Double) v);
          } else if (v == null) {
            g.writeNull();
          } else {
            g.writeString(v.toString());
          }
        }
        g.writeEndObject();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return buffer.toByteArray();
    }
  }

  static FlinkBench.ResultSink kafkaSink(String bootstrap, String topic, Properties source) {
    Properties props = new Properties();
    props.putAll(source);
    // KafkaSink's default (1 h) is over the broker's transaction.max.timeout.ms (15 min).
    props.putIfAbsent("transaction.timeout.ms", "600000");
    return new FlinkBench.ResultSink() {
      @Override
      public <T> void attach(DataStream<T> result, FlinkBench.RowHash<T> hash, String... names) {
        result.sinkTo(KafkaSink.<T>builder()
            .setBootstrapServers(bootstrap)
            .setKafkaProducerConfig(props)
            .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .setTransactionalIdPrefix("weir-bench-" + topic)
            .setRecordSerializer(KafkaRecordSerializationSchema.<T>builder()
                .setTopic(topic)
                .setValueSerializationSchema(new TupleJson<T>(names))
                .build())
            .build());
      }
    };
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: FlinkKafkaBench q0|q1|q2|q5|q7 --bootstrap HOST:PORT --topic T "
          + "--parallelism P [--digest] [--sink none|exactly_once --out-topic T2 "
          + "[--checkpoint-interval-ms MS]] [-X key=value]...");
      System.exit(2);
    }
    String query = args[0];
    String bootstrap = null;
    String topic = null;
    String outTopic = null;
    String sink = "none";
    long checkpointMs = 1000;
    int parallelism = 1;
    boolean digest = false;
    Properties props = new Properties();
    for (int i = 1; i < args.length; ++i) {
      switch (args[i]) {
        case "--bootstrap": bootstrap = args[++i]; break;
        case "--topic": topic = args[++i]; break;
        case "--out-topic": outTopic = args[++i]; break;
        case "--sink": sink = args[++i]; break;
        case "--checkpoint-interval-ms": checkpointMs = Long.parseLong(args[++i]); break;
        case "--parallelism": parallelism = Integer.parseInt(args[++i]); break;
        case "--digest": digest = true; break;
        case "-X": {
          String kv = args[++i];
          int eq = kv.indexOf('=');
          props.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
          break;
        }
        default:
          System.err.println("unknown argument " + args[i]);
          System.exit(2);
      }
    }
    if (bootstrap == null || topic == null
        || !(sink.equals("none") || sink.equals("exactly_once"))
        || (sink.equals("exactly_once") && outTopic == null)) {
      System.err.println("FlinkKafkaBench: needs --bootstrap, --topic, and --out-topic with "
          + "--sink exactly_once");
      System.exit(2);
    }
    Configuration conf = new Configuration();
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
    env.getConfig().enableObjectReuse();
    if (sink.equals("exactly_once")) {
      env.enableCheckpointing(checkpointMs, CheckpointingMode.EXACTLY_ONCE);
    }
    KafkaSource<Bid> source = KafkaSource.<Bid>builder()
        .setBootstrapServers(bootstrap)
        .setTopics(topic)
        .setGroupId("weir-bench-flink")
        .setProperties(props)
        .setStartingOffsets(OffsetsInitializer.earliest())
        .setBounded(OffsetsInitializer.latest())
        .setValueOnlyDeserializer(new BidDeserializer())
        .build();
    DataStream<Bid> bids = env.fromSource(source,
        WatermarkStrategy.<Bid>forBoundedOutOfOrderness(Duration.ofSeconds(4))
            .withTimestampAssigner((b, t) -> b.dateTime),
        "bids");
    FlinkBench.bidQuery(bids, query, sink.equals("none") ? FlinkBench.counting(digest)
        : kafkaSink(bootstrap, outTopic, props));
    long start = System.nanoTime();
    JobExecutionResult result = env.execute("weir-bench-kafka-" + query);
    double wall = (System.nanoTime() - start) / 1e9;
    double net = result.getNetRuntime() / 1e3;
    Long rows = result.getAccumulatorResult("rows");
    Long sum = result.getAccumulatorResult("digest");
    StringBuilder out = new StringBuilder();
    out.append(String.format(Locale.ROOT,
        "{\"engine\":\"flink\",\"query\":\"%s\",\"parallelism\":%d,\"sink\":\"%s\","
            + "\"seconds\":%.6f,\"wall_seconds\":%.6f,\"rows\":%d",
        query, parallelism, sink, net, wall, rows == null ? 0 : rows));
    if (digest && sink.equals("none")) {
      out.append(String.format(Locale.ROOT, ",\"digest\":\"%016x\"", sum == null ? 0 : sum));
    }
    out.append('}');
    System.out.println(out);
  }
}
