CREATE SOURCE t (ts TIMESTAMP, "user" VARCHAR, n BIGINT) WITH (connector = 'file', path = '/tmp/weir-fuzz/in.jsonl', format = 'json', event_time = 'ts', watermark = '1s');
CREATE SINK s WITH (connector = 'blackhole') AS SELECT "user", window_start, window_end, sum(n) AS total FROM session(t, ts, INTERVAL '5 seconds') GROUP BY window_start, window_end, "user" ORDER BY total;
