CREATE SOURCE t (ts TIMESTAMP, "user" VARCHAR, n BIGINT) WITH (connector = 'file', path = '/tmp/weir-fuzz/in.jsonl', format = 'json', event_time = 'ts', watermark = '1s');
CREATE VIEW v AS SELECT "user", n * 2 + 1 AS m, ts FROM t WHERE n BETWEEN 0 AND 9 AND "user" LIKE 'a%';
CREATE SINK s WITH (connector = 'blackhole') AS SELECT CASE WHEN m > 3 THEN upper("user") ELSE 'x' || CAST(m AS VARCHAR) END AS c FROM v;
