CREATE SOURCE t (ts TIMESTAMP, "user" VARCHAR, n BIGINT) WITH (connector = 'file', path = '/tmp/weir-fuzz/in.jsonl', format = 'json', event_time = 'ts', watermark = '1s');
SET job.parallelism = 2;
CREATE TABLE o (u VARCHAR, ws TIMESTAMP, we TIMESTAMP, c BIGINT, top BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT "user", window_start, window_end, count(*), max(n) FROM hop(t, ts, INTERVAL '1' SECOND, INTERVAL '4' SECOND) GROUP BY window_start, window_end, "user" HAVING count(DISTINCT n) > 0;
