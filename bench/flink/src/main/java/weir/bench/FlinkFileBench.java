// SPDX-License-Identifier: Apache-2.0
package weir.bench;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.time.Duration;
import java.util.Locale;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.reader.TextLineInputFormat;
import org.apache.flink.core.fs.Path;
import org.apache.flink.formats.csv.CsvReaderFormat;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.dataformat.csv.CsvMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.dataformat.csv.CsvSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The ingest benchmark's queries (bench/run ingest) over a file of Nexmark bids, as a Flink user
 * would write them: a {@link FileSource} reading
 * <ul>
 *   <li>JSON lines with {@link TextLineInputFormat}, each line read into the {@link Bid} POJO by
 *       a Jackson ObjectMapper (snake_case names; one mapper per subtask, reused);</li>
 *   <li>CSV (a header line, then auction,bidder,price,channel,url,date_time,extra) with
 *       flink-csv's {@link CsvReaderFormat} into the POJO (Jackson's CsvMapper, the schema of
 *       the file's columns).</li>
 * </ul>
 * then FlinkBench's bid queries (q0, q1, q2, q5, q7, tumble) into the counting sink. Flink's
 * FileSource reads a file of either format as one split (a stream format does not split), so
 * at parallelism 2 one subtask reads and the operators after it run on two. Prints one JSON
 * line like FlinkBench; seconds is the job's net runtime.
 *
 * <p>Usage: FlinkFileBench QUERY --file PATH --format jsonl|csv --parallelism P [--digest]
 */
public final class FlinkFileBench {
  private FlinkFileBench() {}

  /** A JSON line into a Bid, through one reused ObjectMapper per subtask. */
  static final class JsonToBid extends RichMapFunction<String, Bid> {
    private static final long serialVersionUID = 1L;
    private transient ObjectMapper mapper;

    @Override
    public void open(Configuration parameters) {
      mapper = new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    }

    @Override
    public Bid map(String line) throws Exception {
      return mapper.readValue(line, Bid.class);
    }
  }

  /** The bid file's CSV columns, in order, named as Bid's properties. */
  static CsvSchema bidCsvSchema(CsvMapper mapper) {
    return CsvSchema.builder()
        .addNumberColumn("auction")
        .addNumberColumn("bidder")
        .addNumberColumn("price")
        .addColumn("channel")
        .addColumn("url")
        .addNumberColumn("dateTime")
        .addColumn("extra")
        .build()
        .withSkipFirstDataRow(true); // the header line
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: FlinkFileBench QUERY --file PATH --format jsonl|csv "
          + "--parallelism P [--digest]");
      System.exit(2);
    }
    String query = args[0];
    String file = null;
    String format = "jsonl";
    int parallelism = 1;
    boolean digest = false;
    for (int i = 1; i < args.length; ++i) {
      switch (args[i]) {
        case "--file": file = args[++i]; break;
        case "--format": format = args[++i]; break;
        case "--parallelism": parallelism = Integer.parseInt(args[++i]); break;
        case "--digest": digest = true; break;
        default:
          System.err.println("unknown argument " + args[i]);
          System.exit(2);
      }
    }
    if (file == null || !(format.equals("jsonl") || format.equals("csv"))) {
      System.err.println("FlinkFileBench: needs --file and --format jsonl|csv");
      System.exit(2);
    }
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.createLocalEnvironment(parallelism, new Configuration());
    env.getConfig().enableObjectReuse();
    WatermarkStrategy<Bid> watermarks = WatermarkStrategy
        .<Bid>forBoundedOutOfOrderness(Duration.ofSeconds(4))
        .withTimestampAssigner((b, t) -> b.dateTime);
    DataStream<Bid> bids;
    if (format.equals("jsonl")) {
      FileSource<String> source =
          FileSource.forRecordStreamFormat(new TextLineInputFormat(), new Path(file)).build();
      bids = env.fromSource(source, WatermarkStrategy.noWatermarks(), "bids")
          .map(new JsonToBid())
          .returns(TypeInformation.of(Bid.class))
          .assignTimestampsAndWatermarks(watermarks);
    } else {
      CsvReaderFormat<Bid> csv = CsvReaderFormat.forSchema(
          CsvMapper::new, FlinkFileBench::bidCsvSchema, TypeInformation.of(Bid.class));
      FileSource<Bid> source = FileSource.forRecordStreamFormat(csv, new Path(file)).build();
      bids = env.fromSource(source, watermarks, "bids");
    }
    FlinkBench.bidQuery(bids, query, FlinkBench.counting(digest));
    long start = System.nanoTime();
    JobExecutionResult result = env.execute("weir-bench-file-" + query);
    double wall = (System.nanoTime() - start) / 1e9;
    double net = result.getNetRuntime() / 1e3;
    Long rows = result.getAccumulatorResult("rows");
    Long sum = result.getAccumulatorResult("digest");
    StringBuilder out = new StringBuilder();
    out.append(String.format(Locale.ROOT,
        "{\"engine\":\"flink\",\"query\":\"%s\",\"format\":\"%s\",\"parallelism\":%d,"
            + "\"seconds\":%.6f,\"wall_seconds\":%.6f,\"rows\":%d",
        query, format, parallelism, net, wall, rows == null ? 0 : rows));
    if (digest) {
      out.append(String.format(Locale.ROOT, ",\"digest\":\"%016x\"", sum == null ? 0 : sum));
    }
    out.append('}');
    System.out.println(out);
  }
}
