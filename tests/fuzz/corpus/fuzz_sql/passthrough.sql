CREATE SOURCE t (ts TIMESTAMP, "user" VARCHAR, n BIGINT) WITH (connector = 'file', path = '/tmp/weir-fuzz/in.jsonl', format = 'json', event_time = 'ts', watermark = '1s');
CREATE SINK s WITH (connector = 'blackhole') AS SELECT * FROM t;
